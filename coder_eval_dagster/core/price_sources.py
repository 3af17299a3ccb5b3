"""Price sources that installed packages add: a model id and a usage in, its cost in USD out.

``pricing.PriceBook`` asks them after the user's price file and before
genai-prices, so a package can price models the library does not know (an
in-house endpoint, a negotiated rate). A package registers a source with
:func:`register`, from a module named in the ``coder_eval_dagster.prices``
entry-point group (imported at start-up, see ``plugins``). The sources are
configuration of the process, like the criterion registry, not state of a run.
"""

from __future__ import annotations

from collections.abc import Callable

from .models.results import TokenUsage
from .plugins import PRICES_GROUP, import_modules

PriceSource = Callable[[str, TokenUsage], float | None]  # (model id, usage) -> USD, None when it does not know
_sources: list[PriceSource] = []


def register(source: PriceSource) -> PriceSource:
    """Add a price source (asked after those registered before it); usable as a decorator."""
    _sources.append(source)
    return source


def installed_cost(model: str, usage: TokenUsage) -> float | None:
    """The first registered source's price of the usage, or None."""
    for source in _sources:
        cost = source(model, usage)
        if cost is not None:
            return cost
    return None


def load_installed() -> None:
    """Import the price modules of installed packages (their import registers their sources)."""
    import_modules(PRICES_GROUP)
