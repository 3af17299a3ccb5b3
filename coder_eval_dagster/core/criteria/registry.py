"""The one registry of criterion types.

A criterion module declares its pydantic model and its check; decorating the
check with ``@checks(Model)`` registers both. Everything else reads the
model: live verdicts for early stop (``LiveObservable`` methods), label
spaces for suite metrics (``Classification`` methods), the type names in
messages, and the task schema's discriminated union, which is rebuilt when a
type is registered after start-up (a plugin, a test).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import CriterionBase
from .context import Outcome

if TYPE_CHECKING:
    from ..check_context import CheckContext

Check = Callable[[Any, "CheckContext"], Outcome]


@dataclass(frozen=True)
class CriterionType:
    model: type[CriterionBase]
    check: Check


REGISTRY: dict[str, CriterionType] = {}
_on_change: list[Callable[[], None]] = []


def type_name(model: type[CriterionBase]) -> str:
    return model.model_fields["type"].annotation.__args__[0]  # type: ignore[union-attr]


def checks(model: type[CriterionBase]) -> Callable[[Check], Check]:
    """Register ``model`` with the decorated function as its check."""

    def register(check: Check) -> Check:
        REGISTRY[type_name(model)] = CriterionType(model, check)
        for listener in _on_change:
            listener()
        return check

    return register


def unregister(name: str) -> None:
    REGISTRY.pop(name, None)
    for listener in _on_change:
        listener()


def on_change(listener: Callable[[], None]) -> None:
    """Call ``listener`` whenever the set of types changes (schemas built from it rebuild)."""
    _on_change.append(listener)


def types_of(base: type) -> list[str]:
    """The registered type names whose model derives from ``base`` (for messages)."""
    return [name for name, kind in REGISTRY.items() if issubclass(kind.model, base)]
