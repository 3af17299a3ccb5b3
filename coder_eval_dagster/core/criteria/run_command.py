"""`run_command`: a command's exit code, optionally its stdout or a score it prints."""

from __future__ import annotations

import math
import shlex
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from .. import patterns
from ..models.base import ShellCommand, check_regex, rule_error
from ..models.criterion import REFERENCE_DIR, TASK_DIR, CriterionBase, names_reference_dir
from ..sandbox.process import CAPPED_MARK, OUTPUT_CAP_BYTES, as_text_mode
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext


class RunCommand(CriterionBase):
    type: Literal["run_command"]
    command: ShellCommand
    timeout: float = Field(default=30, gt=0)
    expected_exit_code: int = 0
    expected_stdout: str | None = None
    stdout_match: Literal["exact", "contains", "regex"] = "exact"
    score_from_stdout: bool = False
    # coder_eval's: the command only inspects files, so its release runs it on a diagnostic pass after an agent crash
    # or turn timeout. No such pass here (a TIMEOUT grades every criterion; a crash, none): accepted, no effect.
    read_only: bool = False

    def reads_reference_dir(self) -> bool:
        return names_reference_dir(self.command)

    def reads_task_dir(self) -> bool:
        """Any mention, not only ``$TASK_DIR``: a script the command runs may read it (``os.environ['TASK_DIR']``)."""
        return TASK_DIR in self.command

    @model_validator(mode="after")
    def _stdout_rules(self) -> RunCommand:
        if self.score_from_stdout and self.expected_stdout is not None:
            raise rule_error("score_from_stdout", "mutually exclusive with expected_stdout")
        if self.stdout_match == "regex":
            try:
                check_regex(self.expected_stdout)
            except ValueError as exc:
                raise rule_error("expected_stdout", str(exc)) from None
        return self


def _stdout_matches(criterion: RunCommand, stdout: str) -> bool:
    """``exact`` and ``contains`` compare both sides stripped, as coder_eval does: a ``|`` block ends in a newline
    that output printed without one must not fail."""
    expected = criterion.expected_stdout or ""
    if criterion.stdout_match == "exact":
        return stdout.strip() == expected.strip()
    if criterion.stdout_match == "contains":
        return expected.strip() in stdout.strip()
    return patterns.search(expected, stdout)


def _score_line(stdout: str) -> tuple[float | None, list[str]]:
    """The first line's number, or None (no number, NaN or infinite): out of [0, 1] it is clamped, as coder_eval
    clamps it (a checker summing weights prints 1.0000000000000002)."""
    lines = stdout.splitlines()
    try:
        score = float(lines[0].strip()) if lines else None
    except ValueError:
        score = None
    return (score if score is not None and math.isfinite(score) else None), lines[1:]


def with_staged_folders(command: str, ctx: CheckContext) -> str:
    """The command with ``REFERENCE_DIR`` and ``TASK_DIR`` exported to it (where the command sees each folder), for
    the folders staged for the criteria; on its first line, so that the shell's messages number its lines as the
    author wrote them (``/bin/sh: 1: ...``)."""
    staged = ((REFERENCE_DIR, ctx.reference_seen), (TASK_DIR, ctx.task_dir_seen))
    exports = [f"export {name}={shlex.quote(str(seen))}; " for name, seen in staged if seen is not None]
    return "".join(exports) + command


@checks(RunCommand)
def check(criterion: RunCommand, ctx: CheckContext) -> Outcome:
    if criterion.reads_task_dir() and ctx.task_dir_refused is not None:
        return Outcome(0.0, {}, error=ctx.task_dir_refused)
    run = as_text_mode(ctx.sandbox.run(with_staged_folders(criterion.command, ctx), criterion.timeout))  # coder_eval's
    details: dict[str, Any] = {"exit_code": run.exit_code, "stdout": run.stdout[-4000:], "stderr": run.stderr[-4000:]}
    if run.oom_killed:
        details["oom_killed"] = True
    # The guide's rule is the exit code: an OOM kill's code the author expected is a pass, not an error.
    expected_code = criterion.expected_exit_code
    if run.error and not (run.oom_killed and run.exit_code == expected_code):
        return Outcome(0.0, details, error=run.error)
    if criterion.score_from_stdout:
        score, rest = _score_line(run.stdout)
        details["details"] = rest[:200]
        if run.exit_code != expected_code:  # 0 unless the task says otherwise, as in coder_eval
            return Outcome(0.0, details, error=f"exit code {run.exit_code} (expected {expected_code})")
        if score is None:
            return Outcome(0.0, details, error="the first stdout line is not a number (a score from 0 to 1)")
        if not 0.0 <= score <= 1.0:
            details["clamped_from"] = score
        return Outcome(min(1.0, max(0.0, score)), details)
    passed = run.exit_code == expected_code
    if passed and criterion.expected_stdout is not None:
        passed = _stdout_matches(criterion, run.stdout)
        details["stdout_matched"] = passed
        if CAPPED_MARK in run.stdout:
            details["stdout_capped"] = f"over {OUTPUT_CAP_BYTES // 1024} KB: its first and last half were matched"
    return Outcome(1.0 if passed else 0.0, details)
