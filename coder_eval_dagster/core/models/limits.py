"""`run_limits`: the single namespace for every run-time cap."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from .base import StrictModel

# The largest values the run's Parquet columns hold (core/tables.py): ``turns`` and ``expected_turns`` are int32,
# token counts int64. A task or trajectory over them would pass validation and then fail the run's table write.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


class RunLimits(StrictModel):
    """Structural caps, budget caps and the early-stop kill switch; unset = no limit."""

    max_turns: int | None = Field(default=None, gt=0, le=INT32_MAX)
    max_tool_calls: int | None = Field(default=None, ge=1)
    expected_turns: int | None = Field(default=None, ge=1, le=INT32_MAX)
    expected_tool_calls: int | None = Field(default=None, ge=1)  # soft: over it warns, never stops
    task_timeout: float | None = Field(default=None, ge=30)
    turn_timeout: float | None = Field(default=None, ge=10)
    max_input_tokens: int | None = Field(default=None, ge=1, le=INT64_MAX)
    max_output_tokens: int | None = Field(default=None, ge=1, le=INT64_MAX)
    max_total_tokens: int | None = Field(default=None, ge=1, le=INT64_MAX)
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
