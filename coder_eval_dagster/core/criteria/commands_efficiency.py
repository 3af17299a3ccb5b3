"""`commands_efficiency`: how economically the agent used tool calls."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from ..models.criterion import CriterionBase
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext


class CommandsEfficiency(CriterionBase):
    needs_agent: ClassVar[bool] = True
    type: Literal["commands_efficiency"]
    expected_commands: int = Field(ge=1)


@checks(CommandsEfficiency)
def check(criterion: CommandsEfficiency, ctx: CheckContext) -> Outcome:
    actual = len(ctx.calls)
    score = criterion.expected_commands / max(actual, criterion.expected_commands)
    return Outcome(score, {"expected_commands": criterion.expected_commands, "actual_commands": actual})
