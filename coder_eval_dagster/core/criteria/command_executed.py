"""`command_executed`: the agent ran (or did not run) a matching tool call."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ..models.base import check_regex, rule_error
from .base import LiveObservable, Scoring


class CommandExecuted(LiveObservable):
    scoring: ClassVar[Scoring] = "fractional"
    type: Literal["command_executed"]
    tool_name: str | None = None
    command_pattern: str | None = None
    min_count: int = Field(default=1, ge=0)
    max_count: int | None = Field(default=None, ge=0)
    require_success: bool = False
    exclude_pattern: str | None = None

    @model_validator(mode="after")
    def _patterns_and_bounds(self) -> CommandExecuted:
        for name in ("command_pattern", "exclude_pattern"):
            try:
                check_regex(getattr(self, name))
            except ValueError as exc:
                raise rule_error(name, str(exc)) from None
        if self.max_count is not None and self.max_count < self.min_count:
            raise rule_error("max_count", f"must be >= min_count ({self.min_count})")
        return self
