"""`run_command`: a command's exit code, optionally its stdout or a score it prints."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ..models.base import check_regex, rule_error
from .base import CriterionBase, Scoring


class RunCommand(CriterionBase):
    scoring: ClassVar[Scoring] = "binary"
    type: Literal["run_command"]
    command: str = Field(min_length=1)
    timeout: float = Field(default=30, gt=0)
    expected_exit_code: int = 0
    expected_stdout: str | None = None
    stdout_match: Literal["exact", "contains", "regex"] = "exact"
    score_from_stdout: bool = False

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
