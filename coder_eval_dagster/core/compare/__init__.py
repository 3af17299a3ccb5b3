"""Comparing variants and runs: paired statistics, reports, figures, history and the runs index.

The modules import pandas, scipy, DuckDB and matplotlib; import them where
they are used (the Dagster layer and ``runs.summarize`` do so lazily), so
that loading the code location or starting a run does not pay for them.
``suite_plots`` is the exception: plain Python, used by suite_metrics.
"""

# The nightly check's ``previous_run`` when the instance knows no earlier run of the task set: here, so that the
# Dagster layer's shortcut for a first run says it without importing the statistics.
NO_PREVIOUS_RUN = "none of the same task set"
