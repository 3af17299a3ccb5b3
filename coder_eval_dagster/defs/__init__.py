"""The Dagster layer, one folder per domain: it says what runs when and calls the core."""
