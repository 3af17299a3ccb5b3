"""`file_contains`: required strings present, forbidden strings absent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ..files import truncation_note
from ..models.base import SandboxPath
from ..models.criterion import CriterionBase
from .outcome import Outcome, fraction, mean
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext


class FileContains(CriterionBase):
    type: Literal["file_contains"]
    path: SandboxPath
    includes: list[str] = Field(default_factory=list)
    excludes: list[str] = Field(default_factory=list)


def string_scores(
    content: str, includes: list[str], excludes: list[str], whole: bool = True
) -> tuple[list[float], dict[str, Any]]:
    """The includes and excludes sub-scores (only non-empty lists count). Over a file read only in part
    (``whole`` False) an exclude not seen is not passed either: it could be in the part not read."""
    found = [s for s in includes if s in content]
    present = [s for s in excludes if s in content]
    unproven = [] if whole else [s for s in excludes if s not in present]
    scores = []
    if includes:
        scores.append(fraction(len(found), len(includes)))
    if excludes:
        scores.append(fraction(len(excludes) - len(present) - len(unproven), len(excludes)))
    missing = [s for s in includes if s not in found]
    details: dict[str, Any] = {"missing_includes": missing, "present_excludes": present}
    if unproven:
        details["unproven_excludes"] = unproven
    return scores, details


@checks(FileContains)
def check(criterion: FileContains, ctx: CheckContext) -> Outcome:
    path, resolved = ctx.resolve_file(criterion.path)
    content, truncated = ctx.read_text(path)
    scores, details = string_scores(content, criterion.includes, criterion.excludes, whole=not truncated)
    return Outcome(mean(scores), resolved | details | truncation_note(path, truncated))
