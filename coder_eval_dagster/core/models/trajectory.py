"""Replay trajectories (CONTRACT.md section 5): recorded agent turns, no model call."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, model_validator

from .base import StrictModel, rule_error

# Parameters each replayed tool needs; any other tool is recorded as given.
REQUIRED_PARAMETERS = {
    "Bash": ("command",),
    "Write": ("path", "content"),
    "Read": ("path",),
    "Edit": ("path", "old", "new"),
    "Skill": ("skill",),
}


class TurnUsage(StrictModel):
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_input_tokens: int = Field(default=0, ge=0)
    cache_creation_input_tokens: int = Field(default=0, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)


class ToolCall(StrictModel):
    """One recorded tool call; its parameters are the keys beside ``tool``."""

    model_config = ConfigDict(extra="allow")
    tool: str = Field(min_length=1)

    @model_validator(mode="after")
    def _required_parameters(self) -> ToolCall:
        for name in REQUIRED_PARAMETERS.get(self.tool, ()):
            if name not in self.parameters:
                raise rule_error(name, f"a {self.tool} call needs {name!r}")
        return self

    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class TrajectoryTurn(StrictModel):
    usage: TurnUsage | None = None
    calls: list[ToolCall] = Field(default_factory=list)
    text: str | None = None


class Trajectory(StrictModel):
    turns: list[TrajectoryTurn] = Field(min_length=1)
