"""The Dagster layer, one module per kind of definition (assets, sensors, schedules, jobs...): it says what runs
when and calls the core."""
