"""`file_check`: existence plus includes, excludes and regex patterns in one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..files import truncation_note
from .file_contains import FileContains, string_scores
from .file_exists import existence
from .file_matches_regex import RegexSpec
from .outcome import Outcome, fraction, mean
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext


class FileCheck(FileContains):
    """file_contains plus regex patterns; a missing file scores 0; with no sub-check, file_exists."""

    type: Literal["file_check"]  # type: ignore[assignment]  # file_contains's fields, under its own tag
    patterns: list[RegexSpec] = Field(default_factory=list)


@checks(FileCheck)
def check(criterion: FileCheck, ctx: CheckContext) -> Outcome:
    if not (criterion.includes or criterion.excludes or criterion.patterns):
        found = existence(criterion.path, ctx)  # the guide: "equivalent to file_exists"
        if found.score == 0.0:  # as every file_check of a missing file, and coder_eval's, says why
            found.error = f"file not found: {criterion.path}"
        return found
    try:
        path, resolved = ctx.resolve_file(criterion.path)
    except FileNotFoundError as exc:
        return Outcome(0.0, {"exists": False}, error=str(exc))
    if ctx.path(path).is_dir():
        return Outcome(0.0, {"exists": True}, error=f"{path} is a folder: its content cannot be checked")
    if not ctx.path(path).is_file():
        if ctx.path(path).exists():  # a FIFO, a socket, a device: there, and not a file to read
            return Outcome(0.0, {"exists": True}, error=f"not a regular file: {path}")
        return Outcome(0.0, {"exists": False}, error=f"file not found: {criterion.path}")
    content, truncated = ctx.read_text(path)
    scores, details = string_scores(content, criterion.includes, criterion.excludes, whole=not truncated)
    details = resolved | details | truncation_note(path, truncated)
    if criterion.patterns:
        failed = [p.pattern for p in criterion.patterns if not p.holds(content, whole=not truncated)]
        scores.append(fraction(len(criterion.patterns) - len(failed), len(criterion.patterns)))
        details["failed_patterns"] = failed
    return Outcome(mean(scores), {"exists": True, **details})
