"""`file_matches_regex`: the file content matches (or must not match) a pattern."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ..models.base import check_regex, rule_error
from .base import CriterionBase, Scoring
from .context import CheckContext, Outcome


class FileMatchesRegex(CriterionBase):
    scoring: ClassVar[Scoring] = "binary"
    type: Literal["file_matches_regex"]
    path: str = Field(min_length=1)
    pattern: str
    must_match: bool = True
    flags: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _compiles(self) -> FileMatchesRegex:
        try:
            check_regex(self.pattern, self.flags)
        except ValueError as exc:
            raise rule_error("pattern", str(exc)) from None
        return self


def check(criterion: FileMatchesRegex, ctx: CheckContext) -> Outcome:
    matched = re.search(criterion.pattern, ctx.read_text(criterion.path), criterion.flags) is not None
    passed = matched == criterion.must_match
    return Outcome(1.0 if passed else 0.0, {"matched": matched, "must_match": criterion.must_match})
