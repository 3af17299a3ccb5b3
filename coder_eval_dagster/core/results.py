"""What an evaluation produces: the records behind task.json, run.json and the tables."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from .sandbox.process import CommandRun

FinalStatus = Literal["SUCCESS", "FAILED", "ERROR", "TIMEOUT", "TOKEN_BUDGET_EXCEEDED", "COST_BUDGET_EXCEEDED"]


class HookRun(CommandRun):
    """A pre_run / post_run command as it ran (or was skipped)."""

    fail_on_error: bool = True
    skipped: bool = False


class ToolCallRecord(BaseModel):
    turn: int
    seq: int
    tool: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    status: Literal["success", "error", "unknown"] = "unknown"
    duration_ms: float = 0.0
    output: str | None = None


class TurnRecord(BaseModel):
    index: int
    calls: list[ToolCallRecord] = Field(default_factory=list)
    text: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cost_usd: float | None = None


class CriterionResult(BaseModel):
    index: int
    type: str
    description: str
    score: float
    passed: bool
    gating: bool
    weight: float
    pass_threshold: float
    error: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    advisory: bool = False  # an unarmed criterion of an early-stopped run
    expected_label: str | None = None
    observed_label: str | None = None


class CommandStats(BaseModel):
    total_commands: int = 0
    commands_by_tool: dict[str, int] = Field(default_factory=dict)
    total_command_time_ms: float = 0.0
    success_rate: float | None = None
    slowest_commands: list[dict[str, Any]] = Field(default_factory=list)


class EvaluationResult(BaseModel):
    """One row-task x variant x replicate: the content of task.json."""

    run_id: str
    task_id: str
    base_task_id: str
    row_id: str | None = None
    variant_id: str
    replicate: int
    description: str = ""
    agent_type: str
    model: str | None = None
    tags: list[str] = Field(default_factory=list)
    final_status: FinalStatus = "ERROR"
    success: bool = False
    weighted_score: float = 0.0
    error: str | None = None
    started_at: str = ""
    finished_at: str = ""
    duration_s: float = 0.0  # the evaluation's own time: the sum of its stages
    stage_durations: dict[str, float] = Field(default_factory=dict)  # seconds per stage (setup, pre_run, ...)
    stages_done: list[str] = Field(default_factory=list)  # the checkpoint a resumed run continues from
    rescored_at: str | None = None
    rescore_duration_s: float | None = None  # the last rescore's own scoring time
    turns: int = 0
    visible_turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    stopped_early: bool = False
    early_stop_reason: str | None = None
    turns_remaining_at_stop: int | None = None
    expected_turns: int | None = None
    within_expected_turns: bool | None = None
    criteria: list[CriterionResult] = Field(default_factory=list)
    pre_run_results: list[HookRun] = Field(default_factory=list)
    post_run_results: list[HookRun] = Field(default_factory=list)
    trajectory: list[TurnRecord] = Field(default_factory=list)
    command_stats: CommandStats = Field(default_factory=CommandStats)
    warnings: list[str] = Field(default_factory=list)

    SUMMARY_FIELDS: ClassVar[tuple[str, ...]] = (
        "task_id",
        "variant_id",
        "replicate",
        "final_status",
        "success",
        "weighted_score",
        "duration_s",
        "stage_durations",
        "turns",
        "visible_turns",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "stopped_early",
        "early_stop_reason",
        "turns_remaining_at_stop",
        "expected_turns",
        "within_expected_turns",
        "criteria",
    )

    def summary(self) -> dict[str, Any]:
        """The run.json entry: the task's headline fields and its criteria."""
        data = self.model_dump(mode="json", include=set(self.SUMMARY_FIELDS))
        return {name: data[name] for name in self.SUMMARY_FIELDS}
