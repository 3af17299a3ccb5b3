"""What a criterion check sees: the preserved sandbox, the task folder, the trajectory, the reference."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from .files import CRITERION_READ_CAP
from .models.results import CriterionResult, ToolCallRecord, TurnRecord
from .sandbox.glob import GLOB_CHARACTERS, sandbox_glob
from .sandbox.templates import effective_ignore_patterns, ignored_entry

if TYPE_CHECKING:
    from .run_context import RunContext
    from .sandbox.base import Sandbox

DialogMessage = tuple[str, str]  # (role: "user" | "agent", text)
MATCHES_SHOWN = 10


@dataclass
class CheckContext:
    sandbox: Sandbox
    task_dir: Path
    trajectory: list[TurnRecord] | None  # None: no agent ran (type none)
    reference: str | None = None
    reference_dir: Path | None = None  # the task's reference folder, staged for the criteria, on this machine
    reference_seen: Path | None = None  # the same folder as the sandbox's commands see it ($REFERENCE_DIR)
    task_dir_seen: Path | None = None  # a copy of the task file's folder as the sandbox's commands see it ($TASK_DIR)
    task_dir_refused: str | None = None  # why the task's folder was not copied (over the cap)
    folder: Path | None = None  # the evaluation's folder (task.json); judges write judge-<idx>.yaml there
    index: int = 0  # the index of the criterion being checked
    prompt: str | None = None  # the task's initial prompt (the dialog's first user message)
    dialog: list[DialogMessage] | None = None  # a multi-turn dialog; None: the single-shot exchange
    exchange_start: int = 0  # the trajectory index where the latest exchange begins (a dialog's; 0: the run)
    # An earlier scoring's judge verdicts, by criterion index, that a judge shown the very same input returns
    # instead of calling (criteria/reuse.py); empty: nothing stored, or --no-reuse.
    verdicts: Mapping[int, CriterionResult] = field(default_factory=dict)
    # The task's agent.ignore_patterns: what a judge agent's copy of the sandbox leaves out besides its own.
    agent_ignore_patterns: list[str] = field(default_factory=list)
    # The evaluation's warnings (shared, not copied): what scoring says beside the results (the services ended).
    warnings: list[str] = field(default_factory=list)
    run: RunContext = field(kw_only=True)  # the run's context: the judges' route, client and limiter

    def path(self, relative: str) -> Path:
        return self.sandbox.resolve_path(relative)

    def read_text(self, relative: str) -> tuple[str, bool]:
        """The file's text, at most CRITERION_READ_CAP bytes of it, and whether it was cut there."""
        return self.sandbox.read_text(relative, CRITERION_READ_CAP)

    def matching_files(self, pattern: str) -> list[str]:
        """The files a criterion's path names: itself when it exists or has no ``*?[`` (a literal path wins), else
        the glob's matches: files only, sorted, inside the sandbox, none under an ignored folder (``node_modules``,
        ``.venv``...) that the pattern does not spell out."""
        if self.path(pattern).exists() or not any(c in pattern for c in GLOB_CHARACTERS):
            return [pattern]
        if PurePosixPath(pattern).is_absolute():
            raise PermissionError(f"path {pattern!r} leaves the sandbox")
        spelled = set(PurePosixPath(pattern).parts)
        ignored = effective_ignore_patterns(self.sandbox.config.ignore_patterns)
        return [
            match
            for match, real in sandbox_glob(self.path, pattern)
            if real.is_file() and not _under_ignored_folder(match, spelled, ignored)
        ]

    def resolve_file(self, pattern: str) -> tuple[str, dict[str, str]]:
        """The one file a content check reads, and the details entry naming it when a glob found it.

        A glob must match exactly one file: none is a missing file, several are
        refused rather than guessed between.
        """
        found = self.matching_files(pattern)
        if found == [pattern]:
            return pattern, {}
        if not found:
            raise FileNotFoundError(f"no file matches {pattern!r} in the sandbox")
        if len(found) > 1:
            shown = ", ".join(found[:MATCHES_SHOWN]) + (" ..." if len(found) > MATCHES_SHOWN else "")
            raise ValueError(f"{pattern!r} matches {len(found)} files; refusing to guess which to grade: {shown}")
        return found[0], {"resolved": found[0]}

    @property
    def calls(self) -> list[ToolCallRecord]:
        return [call for turn in self.trajectory or [] for call in turn.calls]

    @property
    def latest_calls(self) -> list[ToolCallRecord]:
        """The latest agent turn's calls, as a judge's ``include_tool_calls`` shows them: a dialog's latest exchange
        (as its ``include_agent_output`` is that exchange's reply), a single-shot run's every call."""
        return [call for turn in (self.trajectory or [])[self.exchange_start :] for call in turn.calls]

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


def _under_ignored_folder(match: str, spelled: set[str], patterns: list[str]) -> bool:
    """A folder on the match's way that the copy's rules leave out (a name, a path, an anchored ``/sub``) and the
    pattern does not spell out."""
    folders = match.split("/")[:-1]
    return any(
        name not in spelled and ignored_entry(Path(*folders[:depth]), name, patterns)
        for depth, name in enumerate(folders)
    )
