"""Plain-Python core: models, loading, resolution, sandboxes, criteria, reports.

Nothing under this package imports dagster, so it is fast to import and usable
from a notebook or a test without an instance.
"""
