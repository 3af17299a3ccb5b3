"""Comparing variants and runs: paired statistics, reports, figures, history and the runs index.

Most modules import NumPy or PyArrow at their top (``history``: pandas and
DuckDB too; scipy and matplotlib only inside the functions that use them);
import those where they are used (the Dagster layer and ``runs.summarize`` do
so lazily), so that loading the code location or starting a run does not pay
for them. Plain Python at import: ``suite_plots`` (used by suite_metrics),
``index``, ``webpage``, ``interval`` and ``figures``.
"""

# The regression check's ``previous_run`` when the instance knows no earlier run of the task set: here, so that the
# Dagster layer's shortcut for a first run says it without importing the statistics.
NO_PREVIOUS_RUN = "none of the same task set"
