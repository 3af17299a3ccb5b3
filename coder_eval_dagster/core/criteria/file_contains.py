"""`file_contains`: required strings present, forbidden strings absent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ..files import truncation_note
from ..models.criterion import CriterionBase
from .outcome import Outcome, fraction, mean
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext


class FileContains(CriterionBase):
    type: Literal["file_contains"]
    path: str = Field(min_length=1)
    includes: list[str] = Field(default_factory=list)
    excludes: list[str] = Field(default_factory=list)


def string_scores(content: str, includes: list[str], excludes: list[str]) -> tuple[list[float], dict[str, Any]]:
    """The includes and excludes sub-scores (only non-empty lists count)."""
    found = [s for s in includes if s in content]
    present = [s for s in excludes if s in content]
    scores = []
    if includes:
        scores.append(fraction(len(found), len(includes)))
    if excludes:
        scores.append(fraction(len(excludes) - len(present), len(excludes)))
    missing = [s for s in includes if s not in found]
    return scores, {"missing_includes": missing, "present_excludes": present}


@checks(FileContains)
def check(criterion: FileContains, ctx: CheckContext) -> Outcome:
    path, resolved = ctx.resolve_file(criterion.path)
    content, truncated = ctx.read_text(path)
    scores, details = string_scores(content, criterion.includes, criterion.excludes)
    return Outcome(mean(scores), resolved | details | truncation_note(path, truncated))
