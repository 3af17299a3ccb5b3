"""`agent_judge`: a read-only Claude Code agent grades the task with tools."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..models.agent import AgentConfig
from .judge_base import JudgeBase


class AgentJudge(JudgeBase):
    type: Literal["agent_judge"]
    max_turns: int = Field(default=50, ge=1)
    turn_timeout: float = Field(default=300, ge=1)
    agent: AgentConfig | None = None
