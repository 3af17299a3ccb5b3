"""`agent_judge`: a read-only Claude Code agent grades the task with tools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..models.agent import AgentConfig
from .context import Outcome
from .judge_base import JudgeBase
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext


class AgentJudge(JudgeBase):
    type: Literal["agent_judge"]
    max_turns: int = Field(default=50, ge=1)
    turn_timeout: float = Field(default=300, ge=1)
    agent: AgentConfig | None = None


@checks(AgentJudge)
def check(criterion: AgentJudge, ctx: CheckContext) -> Outcome:
    return Outcome(0.0, error="agent_judge is not available in this release of coder-eval (no judge transport yet)")
