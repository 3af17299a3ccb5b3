"""`file_check`: existence plus includes, excludes and regex patterns in one."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ..models.base import StrictModel, check_regex, rule_error
from .base import CriterionBase, Scoring


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
