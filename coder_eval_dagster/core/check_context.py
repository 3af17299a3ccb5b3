"""What a criterion check sees: the preserved sandbox, the task folder, the trajectory, the reference."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .results import ToolCallRecord, TurnRecord

if TYPE_CHECKING:
    from .sandbox.tempdir import TempdirSandbox


@dataclass
class CheckContext:
    sandbox: TempdirSandbox
    task_dir: Path
    trajectory: list[TurnRecord] | None  # None: no agent ran (type none)
    reference: str | None = None

    def path(self, relative: str) -> Path:
        return self.sandbox.resolve_path(relative)

    def read_text(self, relative: str) -> str:
        path = self.path(relative)
        if not path.is_file():
            raise FileNotFoundError(f"file not found: {relative}")
        return path.read_text(encoding="utf-8", errors="replace")

    @property
    def calls(self) -> list[ToolCallRecord]:
        return [call for turn in self.trajectory or [] for call in turn.calls]
