"""`file_exists`: the file is there."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import CriterionBase, Scoring
from .context import CheckContext, Outcome


class FileExists(CriterionBase):
    scoring: ClassVar[Scoring] = "binary"
    type: Literal["file_exists"]
    path: str = Field(min_length=1)


def check(criterion: FileExists, ctx: CheckContext) -> Outcome:
    exists = ctx.path(criterion.path).exists()
    return Outcome(1.0 if exists else 0.0, {"path": criterion.path, "exists": exists})
