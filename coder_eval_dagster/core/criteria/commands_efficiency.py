"""`commands_efficiency`: how economically the agent used tool calls."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import CriterionBase, Scoring


class CommandsEfficiency(CriterionBase):
    scoring: ClassVar[Scoring] = "continuous"
    needs_agent: ClassVar[bool] = True
    type: Literal["commands_efficiency"]
    expected_commands: int = Field(ge=1)
