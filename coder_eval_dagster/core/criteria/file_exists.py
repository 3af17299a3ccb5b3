"""`file_exists`: the file is there (for a glob, at least one file matches)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..models.criterion import CriterionBase
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext


class FileExists(CriterionBase):
    type: Literal["file_exists"]
    path: str = Field(min_length=1)


@checks(FileExists)
def check(criterion: FileExists, ctx: CheckContext) -> Outcome:
    found = ctx.matching_files(criterion.path)
    if found == [criterion.path]:
        exists = ctx.path(criterion.path).exists()
        return Outcome(1.0 if exists else 0.0, {"path": criterion.path, "exists": exists})
    return Outcome(1.0 if found else 0.0, {"path": criterion.path, "exists": bool(found), "resolved": found[:10]})
