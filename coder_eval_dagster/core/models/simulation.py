"""`simulation`: multi-turn dialog with a simulated user."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from .base import StrictModel, rule_error


class Simulation(StrictModel):
    enabled: bool = False
    persona: str  # not blank: a simulated user with no one to be (coder_eval refuses it too)
    goal: str
    constraints: list[str] = Field(default_factory=list)
    max_turns: int = Field(default=8, ge=1, le=100)
    stop_token: str = Field(default="<<<END>>>", min_length=1)
    stop_on_criteria_pass: bool = False
    max_total_tokens: int | None = Field(default=None, ge=1)
    n_trials: int = Field(default=1, ge=1)
    check_criteria: Literal["end_of_dialog", "every_turn", "both"] = "end_of_dialog"
    model: str | None = Field(default=None, min_length=1)
    parallel_trials: int = Field(default=1, ge=1)  # accepted for coder_eval's files: trials already run in parallel

    @field_validator("persona", "goal")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @model_validator(mode="after")
    def _criteria_pass_needs_per_turn_checks(self) -> Simulation:
        if self.stop_on_criteria_pass and self.check_criteria == "end_of_dialog":
            raise rule_error(
                "stop_on_criteria_pass",
                "requires check_criteria: every_turn or both (criteria are otherwise "
                "only checked at the end of the dialog)",
            )
        return self
