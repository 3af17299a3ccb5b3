"""What a criterion check returns, and the small arithmetic checks share."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from ..secrets import redact


@dataclass
class Outcome:
    """A check's verdict before weighting: a score in [0, 1] and its evidence."""

    score: float
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    expected_label: str | None = None
    observed_label: str | None = None


def fraction(passed: int, total: int) -> float:
    return passed / total if total else 1.0


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 1.0


_V = TypeVar("_V")


@overload
def scrub(value: str, reference: str | None) -> str: ...
@overload
def scrub(value: str | None, reference: str | None) -> str | None: ...
@overload
def scrub(value: dict[str, _V], reference: str | None) -> dict[str, _V]: ...
@overload
def scrub(value: object, reference: str | None) -> object: ...
def scrub(value: object, reference: str | None) -> object:
    """Keep the reference solution (and secrets) out of anything persisted: details, errors, transcripts."""
    if isinstance(value, str):
        text = redact(value)
        solution = (reference or "").strip()
        for form in (solution, json.dumps(solution)[1:-1]) if solution else ():  # as is, and inside a JSON string
            text = text.replace(form, "[reference removed]")
        return text
    if isinstance(value, dict):
        return {k: scrub(v, reference) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, reference) for v in value]
    return value
