"""`run_limits`: the single namespace for every run-time cap."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from .base import StrictModel


class RunLimits(StrictModel):
    """Structural caps, budget caps and the early-stop kill switch; unset = no limit."""

    max_turns: int | None = Field(default=None, gt=0)
    max_tool_calls: int | None = Field(default=None, ge=1)
    expected_turns: int | None = Field(default=None, ge=1)
    expected_tool_calls: int | None = Field(default=None, ge=1)  # soft: over it warns, never stops
    task_timeout: float | None = Field(default=None, ge=30)
    turn_timeout: float | None = Field(default=None, ge=10)
    max_input_tokens: int | None = Field(default=None, ge=1)
    max_output_tokens: int | None = Field(default=None, ge=1)
    max_total_tokens: int | None = Field(default=None, ge=1)
    max_usd: float | None = Field(default=None, gt=0.0)
    count_cached_input: bool = False
    count_cache_creation: bool = False
    stop_early: bool | None = None
    stop_early_gate_threshold: float = Field(default=1.0, ge=0.0, le=1.0)

    @field_validator("stop_early", mode="before")
    @classmethod
    def _only_kill_switch(cls, value: Any) -> Any:
        if value is True:
            raise ValueError(
                "stop_early: true (the run-level master arm) was removed; arm criteria "
                "with their own stop_early: block, and use stop_early: false only as "
                "the kill switch"
            )
        return value
