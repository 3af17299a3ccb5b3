"""`command_executed`: the agent ran (or did not run) a matching tool call."""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from .. import patterns
from ..models.base import check_regex, rule_error
from ..models.criterion import LiveObservable
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext
    from ..models.results import ToolCallRecord


class CommandExecuted(LiveObservable):
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

    def can_live_pass(self) -> bool:
        """Only a count with no upper bound can be settled as a pass while the agent runs."""
        return self.max_count is None and self.min_count > 0

    def can_live_fail(self) -> bool:
        return self.max_count is not None

    def live_hit(self, call: ToolCallRecord) -> bool:
        return counts(self, call)

    def live_verdict(self, hits: int) -> Literal["pass", "fail"] | None:
        if self.max_count is not None and hits > self.max_count:  # (can_live_fail)
            return "fail"
        if self.can_live_pass() and hits >= self.min_count:
            return "pass"
        return None


_SHELL_WRAPPER = re.compile(r"^\s*(?:/\S*/)?(?:bash|sh|zsh)\s+-(?:l?c|cl)\s+(?P<body>.+)$", re.DOTALL)


def command_text(call: ToolCallRecord) -> str:
    """The text a pattern is matched against: a Bash command, else the parameter values."""
    if "command" in call.parameters:
        return str(call.parameters["command"])
    return " ".join(str(v) for v in call.parameters.values())


def shell_normalized(command: str) -> str:
    """Strip a ``bash/sh/zsh -lc "..."`` wrapper and resolve shell quoting."""
    wrapped = _SHELL_WRAPPER.match(command)
    if wrapped:
        try:
            parts = shlex.split(wrapped.group("body"))
            command = parts[0] if len(parts) == 1 else wrapped.group("body")
        except ValueError:
            command = wrapped.group("body")
    try:
        return " ".join(shlex.split(command))
    except ValueError:
        return command


def haystacks(call: ToolCallRecord) -> list[str]:
    raw = command_text(call)
    return [raw, shell_normalized(raw)] if call.tool == "Bash" else [raw]


def counts(criterion: CommandExecuted, call: ToolCallRecord) -> bool:
    if criterion.tool_name is not None and call.tool != criterion.tool_name:
        return False
    if criterion.require_success and call.status != "success":
        return False
    texts = haystacks(call)
    if criterion.command_pattern is not None and not any(patterns.search(criterion.command_pattern, t) for t in texts):
        return False
    excluded = criterion.exclude_pattern
    return not (excluded is not None and any(patterns.search(excluded, t) for t in texts))


def score_for(criterion: CommandExecuted, matched: int) -> float:
    """matched / min_count (capped at 1); 0 once max_count is exceeded."""
    if criterion.max_count is not None and matched > criterion.max_count:
        return 0.0
    return min(1.0, matched / criterion.min_count) if criterion.min_count else 1.0


@checks(CommandExecuted)
def check(criterion: CommandExecuted, ctx: CheckContext) -> Outcome:
    matched = [command_text(c) for c in ctx.calls if counts(criterion, c)]
    details = {"matches": len(matched), "matched_commands": matched[:20], "total_calls": len(ctx.calls)}
    return Outcome(score_for(criterion, len(matched)), details)
