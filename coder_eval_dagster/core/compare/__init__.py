"""Comparing variants and runs: paired statistics, reports, figures, history and the runs index.

The modules import pandas, scipy, DuckDB and matplotlib; import them where
they are used (the Dagster layer and ``runs.summarize`` do so lazily), so
that loading the code location or starting a run does not pay for them.
``suite_plots`` is the exception: plain Python, used by suite_metrics.
"""
