"""Evaluation domain: the asset graph task_definitions -> ... -> suite_metrics."""
