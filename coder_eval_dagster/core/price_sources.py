"""The hook for a price library (issue 29): a model id and a turn's usage in, its cost in USD out.

An agent whose CLI reports no cost for a turn asks :func:`turn_cost`. No
source is registered yet, so the answer is None: no cost is made up, and a
``max_usd`` budget is then skipped with its warning. A price library
registers a source with :func:`register`, from this package or from an
installed package's module named in the ``coder_eval_dagster.prices``
entry-point group (imported at start-up, see ``plugins``).
"""

from __future__ import annotations

from collections.abc import Callable

from .models.results import TurnRecord
from .plugins import PRICES_GROUP, import_modules

PriceSource = Callable[[str, TurnRecord], float | None]  # (model id, the turn's usage) -> USD, None when unknown
_sources: list[PriceSource] = []


def register(source: PriceSource) -> PriceSource:
    """Add a price source (asked after those registered before it); usable as a decorator."""
    _sources.append(source)
    return source


def turn_cost(model: str, turn: TurnRecord) -> float | None:
    """The first registered source's price of the turn, or None."""
    for source in _sources:
        cost = source(model, turn)
        if cost is not None:
            return cost
    return None


def load_installed() -> None:
    """Import the price modules of installed packages (their import registers their sources)."""
    import_modules(PRICES_GROUP)
