"""`file_check`: existence plus includes, excludes and regex patterns in one."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ..models.base import StrictModel, check_regex, rule_error
from .base import CriterionBase, Scoring
from .context import CheckContext, Outcome, fraction, mean
from .file_contains import string_scores


class RegexCheck(StrictModel):
    pattern: str
    must_match: bool = True
    flags: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _compiles(self) -> RegexCheck:
        try:
            check_regex(self.pattern, self.flags)
        except ValueError as exc:
            raise rule_error("pattern", str(exc)) from None
        return self


class FileCheck(CriterionBase):
    scoring: ClassVar[Scoring] = "fractional"
    type: Literal["file_check"]
    path: str = Field(min_length=1)
    includes: list[str] = Field(default_factory=list)
    excludes: list[str] = Field(default_factory=list)
    patterns: list[RegexCheck] = Field(default_factory=list)


def check(criterion: FileCheck, ctx: CheckContext) -> Outcome:
    path = ctx.path(criterion.path)
    if not path.is_file():
        return Outcome(0.0, {"exists": False}, error=f"file not found: {criterion.path}")
    content = ctx.read_text(criterion.path)
    scores, details = string_scores(content, criterion.includes, criterion.excludes)
    if criterion.patterns:
        failed = [
            p.pattern
            for p in criterion.patterns
            if (re.search(p.pattern, content, p.flags) is not None) != p.must_match
        ]
        scores.append(fraction(len(criterion.patterns) - len(failed), len(criterion.patterns)))
        details["failed_patterns"] = failed
    return Outcome(mean(scores), {"exists": True, **details})
