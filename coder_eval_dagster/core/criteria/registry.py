"""The one registry of criterion types: each module's model and its check, registered together.

A criterion module declares its pydantic model and its check; decorating the
check with ``@checks(Model)`` registers both: the model with the format
(``models.criterion``), the check here. Everything else reads the model: live
verdicts for early stop (``LiveObservable`` methods), label spaces for suite
metrics (``Classification`` methods), the type names in messages, and the
task schema's discriminated union. Installed packages add criteria the same
way: a module named in the ``coder_eval_dagster.criteria`` entry-point group
decorates its checks with ``@checks`` (imported at start-up, after the
built-ins: :func:`load_installed`). A type name is registered once: a later
``@checks`` of a name taken (a built-in's, an earlier package's, a legacy
alias) is left out with a warning, so a package cannot grade in a built-in's
place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..models.criterion import CRITERION_ALIASES, CriterionBase, register_model, type_name, unregister_model
from ..plugins import CRITERIA_GROUP, import_modules
from .outcome import Outcome

if TYPE_CHECKING:
    from ..check_context import CheckContext

Check = Callable[[Any, "CheckContext"], Outcome]


@dataclass(frozen=True)
class CriterionType:
    model: type[CriterionBase]
    check: Check


REGISTRY: dict[str, CriterionType] = {}
log = logging.getLogger(__name__)


def checks(model: type[CriterionBase]) -> Callable[[Check], Check]:
    """Register ``model`` with the decorated function as its check, unless its type name is taken (then warned)."""

    def register(check: Check) -> Check:
        name = type_name(model)
        holder = _holder(name)
        if holder is None:
            REGISTRY[register_model(model)] = CriterionType(model, check)
        else:
            log.warning("coder-eval: left out criterion type %s of %s: %s has it", name, check.__module__, holder)
        return check

    return register


def _holder(name: str) -> str | None:
    """What already has the type name (None: it is free): the module that registered it, or the alias it is."""
    if name in CRITERION_ALIASES:
        return f"a legacy alias of {CRITERION_ALIASES[name]['type']}"
    kind = REGISTRY.get(name)
    if kind is None:
        return None
    return f"the built-in {kind.check.__module__}" if _is_built_in(kind.check) else kind.check.__module__


def _is_built_in(check: Check) -> bool:
    return check.__module__.startswith(f"{__package__}.")


def unregister(name: str) -> None:
    REGISTRY.pop(name, None)
    unregister_model(name)


def load_installed() -> None:
    """Import the criterion modules of installed packages (their ``@checks`` register them)."""
    import_modules(CRITERIA_GROUP)
