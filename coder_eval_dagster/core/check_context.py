"""What a criterion check sees: the preserved sandbox, the task folder, the trajectory, the reference."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .files import CRITERION_READ_CAP, read_text_capped
from .models.results import ToolCallRecord, TurnRecord

if TYPE_CHECKING:
    from .run_context import RunContext
    from .sandbox.base import Sandbox

DialogMessage = tuple[str, str]  # (role: "user" | "agent", text)


@dataclass
class CheckContext:
    sandbox: Sandbox
    task_dir: Path
    trajectory: list[TurnRecord] | None  # None: no agent ran (type none)
    reference: str | None = None
    folder: Path | None = None  # the evaluation's folder (task.json); judges write judge-<idx>.yaml there
    index: int = 0  # the index of the criterion being checked
    prompt: str | None = None  # the task's initial prompt (the dialog's first user message)
    dialog: list[DialogMessage] | None = None  # a multi-turn dialog; None: the single-shot exchange
    run: RunContext = field(kw_only=True)  # the run's context: the judges' route, client and limiter

    def path(self, relative: str) -> Path:
        return self.sandbox.resolve_path(relative)

    def read_text(self, relative: str) -> tuple[str, bool]:
        """The file's text, at most CRITERION_READ_CAP bytes of it, and whether it was cut there."""
        return read_text_capped(self.path(relative), CRITERION_READ_CAP, relative)

    @property
    def calls(self) -> list[ToolCallRecord]:
        return [call for turn in self.trajectory or [] for call in turn.calls]

    @property
    def final_text(self) -> str | None:
        """The agent's last reply (the latest turn's output)."""
        texts = [turn.text for turn in self.trajectory or [] if turn.text]
        return texts[-1] if texts else None

    def conversation(self) -> list[DialogMessage]:
        """The whole user<->agent dialog; a single-shot run is the prompt and the final reply."""
        if self.dialog is not None:
            return list(self.dialog)
        messages = [("user", self.prompt)] if self.prompt else []
        return messages + ([("agent", self.final_text)] if self.final_text else [])
