"""What an evaluation produces: the records behind task.json, run.json and the tables."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, computed_field

FinalStatus = Literal["SUCCESS", "FAILED", "ERROR", "TIMEOUT", "TOKEN_BUDGET_EXCEEDED", "COST_BUDGET_EXCEEDED"]


class CommandRun(BaseModel):
    """What one shell command did (output capped, secrets redacted)."""

    command: str
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    timed_out: bool = False
    # set by a driver that can tell (docker): the exit code is the kill's, which a criterion may expect
    oom_killed: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None


class HookRun(CommandRun):
    """A pre_run / post_run command as it ran (or was skipped)."""

    fail_on_error: bool = True
    skipped: bool = False


ToolCallStatus = Literal["success", "error", "unknown"]


class ToolCallRecord(BaseModel):
    turn: int
    seq: int
    tool: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    status: ToolCallStatus = "unknown"
    duration_ms: float = 0.0
    output: str | None = None
    started_at: float | None = None  # epoch seconds, when the agent reports it (telemetry spans)


class TurnRecord(BaseModel):
    index: int
    calls: list[ToolCallRecord] = Field(default_factory=list)
    text: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cost_usd: float | None = None
    started_at: float | None = None  # epoch seconds: the round trip's start and end, when the agent reports them
    ended_at: float | None = None


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
    inputs: dict[str, Any] = Field(default_factory=dict)  # what the criterion was asked to check (its fields)
    details: dict[str, Any] = Field(default_factory=dict)
    advisory: bool = False  # an unarmed criterion of an early-stopped run
    expected_label: str | None = None
    observed_label: str | None = None

    @property
    def judge_usage(self) -> dict[str, Any] | None:
        """A judge's spend (tokens, cost, seconds); None for the other criteria."""
        return self.details.get("judge_usage")


DialogStopReason = Literal["stop_token", "criteria_pass", "max_turns", "budget", "error", "run_limits"]


class DialogMessage(BaseModel):
    """One message of a simulated dialog; the user message opening exchange n and the agent's reply share ``turn`` n."""

    turn: int
    role: Literal["user", "agent"]
    text: str
    tokens: int = 0  # the simulator call (user) or the agent's exchange (agent), input + output
    criteria_passed: bool | None = None  # the per-turn check after this agent message (check_criteria)
    started_at: float | None = None  # epoch seconds: the simulator call's start and end (telemetry spans)
    ended_at: float | None = None


class SimulationInfo(BaseModel):
    """A dialog's outcome; ``turns`` counts the completed user<->agent exchanges."""

    enabled: bool = True
    replicate_index: int
    n_trials: int
    turns: int = 0
    stop_reason: DialogStopReason | None = None


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
    trace_id: str | None = None  # the evaluation's OpenTelemetry trace (when telemetry exports)
    duration_s: float = 0.0  # the evaluation's own time: the sum of its stages
    stage_durations: dict[str, float] = Field(default_factory=dict)  # seconds per stage (setup, pre_run, ...)
    phases_done: list[str] = Field(default_factory=list)  # sandbox, scoring: what a resumed run keeps
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
    environment_info: dict[str, Any] = Field(default_factory=dict)  # judge_transport: anthropic | bedrock | none
    simulation: SimulationInfo | None = None  # a simulated dialog's outcome; None: a single-shot run
    dialog: list[DialogMessage] = Field(default_factory=list)
    simulator_input_tokens: int = 0  # the simulated user's spend (never counted against run_limits)
    simulator_output_tokens: int = 0

    # Judge spend, from the criteria (never counted against run_limits, which cap the agent only).
    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def judge_input_tokens(self) -> int:
        return sum(usage["input_tokens"] for usage in self._judge_usages())

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def judge_output_tokens(self) -> int:
        return sum(usage["output_tokens"] for usage in self._judge_usages())

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def judge_cost_usd(self) -> float | None:
        costs = [usage["cost_usd"] for usage in self._judge_usages() if usage.get("cost_usd") is not None]
        return round(sum(costs), 6) if costs else None

    def _judge_usages(self) -> list[dict[str, Any]]:
        return [c.judge_usage for c in self.criteria if c.judge_usage]

    SUMMARY_FIELDS: ClassVar[tuple[str, ...]] = (
        "task_id",
        "variant_id",
        "replicate",
        "final_status",
        "success",
        "error",
        "weighted_score",
        "duration_s",
        "stage_durations",
        "turns",
        "visible_turns",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "judge_input_tokens",
        "judge_output_tokens",
        "judge_cost_usd",
        "stopped_early",
        "early_stop_reason",
        "turns_remaining_at_stop",
        "expected_turns",
        "within_expected_turns",
        "simulation",
        "simulator_input_tokens",
        "simulator_output_tokens",
        "criteria",
    )

    def summary(self) -> dict[str, Any]:
        """The run.json entry: the task's headline fields and its criteria."""
        data = self.model_dump(mode="json", include=set(self.SUMMARY_FIELDS))
        return {name: data[name] for name in self.SUMMARY_FIELDS}
