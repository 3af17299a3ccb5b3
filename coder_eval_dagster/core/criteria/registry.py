"""The one registry of criterion types: each module's model and its check, registered together.

A criterion module declares its pydantic model and its check; decorating the
check with ``@checks(Model)`` registers both: the model with the format
(``models.criterion``), the check here. Everything else reads the model: live
verdicts for early stop (``LiveObservable`` methods), label spaces for suite
metrics (``Classification`` methods), the type names in messages, and the
task schema's discriminated union. Installed packages add criteria the same
way: a module named in the ``coder_eval_dagster.criteria`` entry-point group
decorates its checks with ``@checks`` (imported at start-up, after the
built-ins: :func:`load_installed`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..models.criterion import CriterionBase, register_model, unregister_model
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


def checks(model: type[CriterionBase]) -> Callable[[Check], Check]:
    """Register ``model`` with the decorated function as its check."""

    def register(check: Check) -> Check:
        REGISTRY[register_model(model)] = CriterionType(model, check)
        return check

    return register


def unregister(name: str) -> None:
    REGISTRY.pop(name, None)
    unregister_model(name)


def load_installed() -> None:
    """Import the criterion modules of installed packages (their ``@checks`` register them)."""
    import_modules(CRITERIA_GROUP)
