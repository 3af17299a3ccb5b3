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
    """expected / max(actual, expected); 0 with no tool call, as coder_eval scores it and as task.json's own figure
    is. No agent run at all (``evaluate``) has nothing to count: an error, as skill_triggered's."""
    if not ctx.trajectory:
        return Outcome(0.0, error="no agent turn records: commands_efficiency needs a real agent run")
    actual = len(ctx.calls)
    expected = criterion.expected_commands
    details = {"expected_commands": expected, "actual_commands": actual}
    if actual == 0:
        return Outcome(0.0, details | {"note": "no tool call recorded"})
    return Outcome(expected / max(actual, expected), details)
