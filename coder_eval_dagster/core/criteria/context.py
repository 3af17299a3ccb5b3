"""What a criterion check sees, and what it returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    capped_reads: list[str] = field(default_factory=list)  # files read only in part, for the details

    def path(self, relative: str) -> Path:
        return self.sandbox.resolve_path(relative)

    def read_text(self, relative: str) -> str:
        if not self.path(relative).is_file():
            raise FileNotFoundError(f"file not found: {relative}")
        text, capped = self.sandbox.read_text(relative)
        if capped:
            self.capped_reads.append(f"{relative}: only the first {len(text.encode()) // 1024} KB were read")
        return text

    @property
    def calls(self) -> list[ToolCallRecord]:
        return [call for turn in self.trajectory or [] for call in turn.calls]


def fraction(passed: int, total: int) -> float:
    return passed / total if total else 1.0


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 1.0
