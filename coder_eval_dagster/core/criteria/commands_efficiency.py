"""`commands_efficiency`: how economically the agent used tool calls."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import CriterionBase, Scoring
from .context import CheckContext, Outcome


class CommandsEfficiency(CriterionBase):
    scoring: ClassVar[Scoring] = "continuous"
    needs_agent: ClassVar[bool] = True
    type: Literal["commands_efficiency"]
    expected_commands: int = Field(ge=1)


def check(criterion: CommandsEfficiency, ctx: CheckContext) -> Outcome:
    actual = len(ctx.calls)
    score = criterion.expected_commands / max(actual, criterion.expected_commands)
    return Outcome(score, {"expected_commands": criterion.expected_commands, "actual_commands": actual})
