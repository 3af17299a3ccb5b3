"""Plain-Python core: models, loading, resolution, sandboxes, criteria, reports.

Nothing under this package imports dagster, so it is fast to import and usable
from a notebook or a test without an instance.

The built-in criterion types register themselves with the format when their
package is imported; it is imported here, first, so that a task model built
anywhere below knows them all.
"""

from . import criteria as criteria  # registers the built-in criterion types (before the task model is built)
