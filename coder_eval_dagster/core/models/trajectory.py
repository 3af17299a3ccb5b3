"""Replay trajectories (CONTRACT.md section 5): recorded agent turns, no model call."""

from __future__ import annotations

import difflib
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from .base import StrictModel, rule_error
from .limits import INT64_MAX

# Parameters each replayed tool needs; any other tool is recorded as given.
REQUIRED_PARAMETERS = {
    "Bash": ("command",),
    "Write": ("path", "content"),
    "Read": ("path",),
    "Edit": ("path", "old", "new"),
    "Skill": ("skill",),
}


TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class TurnUsage(StrictModel):
    input_tokens: int = Field(default=0, ge=0, le=INT64_MAX)
    output_tokens: int = Field(default=0, ge=0, le=INT64_MAX)
    cache_read_input_tokens: int = Field(default=0, ge=0, le=INT64_MAX)
    cache_creation_input_tokens: int = Field(default=0, ge=0, le=INT64_MAX)
    cost_usd: float | None = Field(default=None, ge=0)
    # Where the recorded cost came from: ``reported`` (the agent's own figure; without cost_usd, a later turn's
    # figure covers this one, as Claude Code reports one per exchange) or ``priced`` (the recording run priced it).
    # None: a cost_usd is the recorded session's own figure, and a turn without one is priced at the run's prices.
    cost_source: Literal["reported", "priced"] | None = None


def _misspelt(name: str, given: list[str]) -> str:
    """`` (is `x` it, misspelt?)`` for the given parameter closest to the one missing, or nothing."""
    close = difflib.get_close_matches(name, given, n=1, cutoff=0.6)
    return f" (is `{close[0]}` it, misspelt?)" if close else ""


class ToolCall(StrictModel):
    """One recorded tool call; its parameters are the keys beside ``tool``."""

    model_config = ConfigDict(extra="allow")
    tool: str = Field(min_length=1)

    @model_validator(mode="after")
    def _required_parameters(self) -> ToolCall:
        for name in REQUIRED_PARAMETERS.get(self.tool, ()):
            if name not in self.parameters:
                raise rule_error(name, f"a {self.tool} call needs {name!r}{_misspelt(name, list(self.parameters))}")
            value = self.parameters[name]
            if value is None or isinstance(value, bool | list | dict):  # (a number is its text: a row's ${row.n})
                shown = "nothing (null)" if value is None else repr(value)
                raise rule_error(name, f"must be text, got {shown}" + (": write '' for none" if value is None else ""))
        return self

    @property
    def parameters(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class TrajectoryTurn(StrictModel):
    """An agent turn, or (``user:`` alone) the simulated user's message that opens the next exchange of a dialog."""

    usage: TurnUsage | None = None
    calls: list[ToolCall] = Field(default_factory=list)
    text: str | None = None
    user: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _user_message_stands_alone(self) -> TrajectoryTurn:
        if self.user is not None and (self.calls or self.text is not None or self.usage is not None):
            raise rule_error("user", "a user: message stands alone (no calls, text or usage beside it)")
        return self


class Trajectory(StrictModel):
    turns: list[TrajectoryTurn] = Field(min_length=1)

    @model_validator(mode="after")
    def _user_messages_between_turns(self) -> Trajectory:
        """A user: message ends an exchange, so an agent turn follows it and one ends the trajectory; a leading one
        is the user's opening (a dialog whose task has no prompt) and an agent turn follows it too."""
        if self.turns[-1].user is not None or self.played[0].user is not None:
            raise rule_error(
                "turns",
                "a user: message goes between agent turns (or first: the opening of a dialog whose task has no prompt)",
            )
        return self

    @model_validator(mode="after")
    def _token_totals_fit(self) -> Trajectory:
        """The replay's token totals go to the run's int64 table columns: a sum over them would fail the run's end."""
        for name in TOKEN_FIELDS:
            if sum(getattr(turn.usage, name) for turn in self.turns if turn.usage) > INT64_MAX:
                raise rule_error("turns", f"the turns' {name} add up to more than the run's tables hold ({INT64_MAX})")
        return self

    @property
    def opening(self) -> str | None:
        """A leading ``user:`` message: the opening of a dialog whose task has no prompt of its own."""
        return self.turns[0].user

    @property
    def played(self) -> list[TrajectoryTurn]:
        """What a replay plays: the agent's turns and the user's messages between them, without a leading opening."""
        return self.turns[1:] if self.opening is not None else self.turns

    @property
    def user_messages(self) -> list[str]:
        """The recorded user messages, in order, the opening first (a replayed dialog's simulated user)."""
        return [turn.user for turn in self.turns if turn.user is not None]
