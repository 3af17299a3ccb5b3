"""What a criterion check sees, and what it returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files import CRITERION_READ_CAP, read_text_capped
from ..results import ToolCallRecord, TurnRecord
from ..sandbox.tempdir import TempdirSandbox


@dataclass
class Outcome:
    """A check's verdict before weighting: a score in [0, 1] and its evidence."""

    score: float
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    expected_label: str | None = None
    observed_label: str | None = None
    threshold: float | None = None  # a criterion-specific pass threshold (reference_comparison)


@dataclass
class CheckContext:
    sandbox: TempdirSandbox
    task_dir: Path
    trajectory: list[TurnRecord] | None  # None: no agent ran (type none)
    reference: str | None = None

    def path(self, relative: str) -> Path:
        return self.sandbox.resolve_path(relative)

    def read_text(self, relative: str) -> tuple[str, bool]:
        """The file's text, at most CRITERION_READ_CAP bytes of it, and whether it was cut there."""
        return read_text_capped(self.path(relative), CRITERION_READ_CAP, relative)

    @property
    def calls(self) -> list[ToolCallRecord]:
        return [call for turn in self.trajectory or [] for call in turn.calls]


def fraction(passed: int, total: int) -> float:
    return passed / total if total else 1.0


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 1.0
