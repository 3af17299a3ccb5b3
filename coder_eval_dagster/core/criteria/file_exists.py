"""`file_exists`: the file is there (for a glob, at least one file matches)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ..models.base import SandboxPath
from ..models.criterion import CriterionBase
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext


class FileExists(CriterionBase):
    type: Literal["file_exists"]
    path: SandboxPath


@checks(FileExists)
def check(criterion: FileExists, ctx: CheckContext) -> Outcome:
    return existence(criterion.path, ctx)


def existence(path: str, ctx: CheckContext) -> Outcome:
    """1 when ``path`` exists (a folder too), or, for a glob, when any file matches it."""
    found = ctx.matching_files(path)
    if found == [path]:
        exists = ctx.path(path).exists()
        return Outcome(1.0 if exists else 0.0, {"path": path, "exists": exists})
    return Outcome(1.0 if found else 0.0, {"path": path, "exists": bool(found), "resolved": found[:10]})
