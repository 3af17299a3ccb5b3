"""Plain-Python core: models, loading, resolution, sandboxes, criteria, reports.

Nothing under this package imports dagster, so it is fast to import and usable
from a notebook or a test without an instance.

The built-in agent types, sandbox drivers and criterion types register
themselves with the format (``core/models``) when their packages are
imported; they are imported here, first, in this order (the criteria
validate agent configs and build the task model), so that a model built or
validated anywhere below knows them all. The agent types, criteria and
price sources of installed packages (entry points, see ``plugins``) come
right after the built-ins.
"""

# isort: off
from .agents import registry as _agents  # noqa: F401  (built-in and installed agent types)
from . import sandbox as _sandbox  # noqa: F401
from . import criteria as criteria
from .criteria.registry import load_installed as _load_installed_criteria
from .price_sources import load_installed as _load_installed_prices

# isort: on
_load_installed_criteria()
_load_installed_prices()
