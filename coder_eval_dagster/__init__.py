"""coder-eval on Dagster: an evaluation harness for AI coding agents."""

__version__ = "0.1.0"
