"""What a criterion check returns, and the small arithmetic checks share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Outcome:
    """A check's verdict before weighting: a score in [0, 1] and its evidence."""

    score: float
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    expected_label: str | None = None
    observed_label: str | None = None
    threshold: float | None = None  # a criterion-specific pass threshold (reference_comparison)


def fraction(passed: int, total: int) -> float:
    return passed / total if total else 1.0


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 1.0
