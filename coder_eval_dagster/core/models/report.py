"""A run's report files in coder_eval's schema (its docs/REPORT_SCHEMA.md), beside task.json (``results.py``).

    run.json                        RunSummary: flat ``task_results`` rows, the counts, the computed rates and costs
    <variant>/variant.json          VariantAggregate: the variant's tasks, replicates folded
    experiment.json                 ExperimentResult: every task across the variants
    <variant>/<suite_id>/suite.json SuiteRollup: a dataset-backed task's rows (``reports/files.py`` builds it)

What the schema computes (``tasks_run``, ``pass_rate``, the cost roll-ups...)
is a computed field: written on every dump, recomputed on every read, never
apart from the rows it summarises. Names our earlier run.json files used are
read too (``tasks`` -> ``task_results``, ``replicate`` -> ``replicate_index``,
``final_status`` -> ``status``...), so ``compare``, the runs index and
``history`` read run folders written before this schema. So does a run.json
coder_eval wrote: its verdict (ours, ``passed``) is the one its exit code
gives.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from .results import (
    STATUS_CATEGORY,
    CostSource,
    CriterionResult,
    EvaluationResult,
    SimulationInfo,
    Status,
    TokenUsage,
    current_status,
    instant,
)


def _sum(values: list[float | None]) -> float | None:
    """The sum of the known values; None when none is known."""
    known = [v for v in values if v is not None]
    return round(sum(known), 6) if known else None


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


class SkippedTask(BaseModel):
    """A task file the run left out: its path and why (``task_id``, ours, when it was read)."""

    path: str
    reason: str
    task_id: str | None = None


class RowSelection(BaseModel):
    """Which rows of the datasets the run selected (the schema's ``row_selection``): ``--split``, ``--sample``
    (``max_rows``), ``--sample-per-stratum``; null where the run asked for none."""

    split: str | None = None
    max_rows: int | None = None
    sample_per_stratum: int | None = None


class TaskRow(BaseModel):
    """A run.json ``task_results`` row: coder_eval's row (all its keys, null where unknown) and ours beside it."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)  # earlier names: validation_alias

    task_id: str
    replicate_index: int = Field(validation_alias="replicate")
    status: Status = Field(validation_alias="final_status")
    weighted_score: float | None
    duration: float = Field(validation_alias="duration_s")
    iteration_count: int = 0
    tags: list[str] = Field(default_factory=list)
    task_path: str | None = None
    iterations: list[dict[str, Any]] = Field(default_factory=list)
    startup_ms: float | None = None  # the agent's time buckets: not measured here
    generation_ms: float | None = None
    tool_ms: float | None = None
    teardown_ms: float | None = None
    agent_wall_ms: float | None = None
    setup_ms: float | None = None
    grading_ms: float | None = None
    model_used: str | None = Field(default=None, validation_alias="model")
    reference_similarity: float | None = None
    input_tokens: int | None = None  # uncached
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    total_tokens: int | None = None
    total_cost_usd: float | None = None  # agent + judges + simulated user
    agent_cost_usd: float | None = Field(default=None, validation_alias="cost_usd")
    cost_complete: bool = True
    judge_cost_usd: float | None = None
    simulator_cost_usd: float | None = None
    error_message: str | None = Field(default=None, validation_alias="error")
    error_category: str | None = None
    expected_commands: int | None = None
    actual_commands: int | None = None
    commands_efficiency: float | None = None
    agent_config: dict[str, Any] | None = None
    sdk_options: dict[str, Any] | None = None
    installed_tools: list[str] | None = None
    max_turns_exhausted: bool = False
    expected_turns_overage: list[int] | None = None
    total_turns: int = Field(default=0, validation_alias="turns")
    visible_turns: int = 0
    expected_turns: int | None = None
    has_final_reply: bool = False
    stopped_early: bool = False
    early_stop_reason: str | None = None
    turns_remaining_at_stop: int | None = None
    gate_threshold: float | None = None
    variant_id: str
    # ours
    base_task_id: str | None = None
    row_id: str | None = None
    success: bool = False
    agent_type: str | None = None
    stage_durations: dict[str, float] = Field(default_factory=dict)
    within_expected_turns: bool | None = None
    warnings: list[str] = Field(default_factory=list)  # the evaluation's (task.json): run-time notes
    judge_input_tokens: int = 0
    judge_output_tokens: int = 0
    simulation: SimulationInfo | None = None
    criteria: list[CriterionResult] = Field(default_factory=list)
    trace_id: str | None = None  # the evaluation's OpenTelemetry trace (when telemetry exports)
    cost_source: CostSource | None = None  # where agent_cost_usd came from (reported, priced, unknown)
    judge_token_usage: TokenUsage | None = None
    simulator_token_usage: TokenUsage | None = None

    SIMILARITY_TYPE: ClassVar[str] = "reference_comparison"  # its score is the row's reference_similarity

    @model_validator(mode="before")
    @classmethod
    def _coder_eval_form(cls, data: Any) -> Any:
        """coder_eval's row has no ``success``: its status says it."""
        if isinstance(data, dict) and "success" not in data:
            return {**data, "success": current_status(data.get("status", data.get("final_status"))) == "SUCCESS"}
        return data

    @property
    def agent_token_usage(self) -> TokenUsage | None:
        """The agent's usage record, from the row's flat columns (None: no agent ran)."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return TokenUsage(
            uncached_input_tokens=self.input_tokens or 0,
            output_tokens=self.output_tokens or 0,
            cache_creation_input_tokens=self.cache_creation_input_tokens or 0,
            cache_read_input_tokens=self.cache_read_input_tokens or 0,
            total_cost_usd=self.agent_cost_usd,
            cost_source=self.cost_source,
        )

    @classmethod
    def of(cls, result: EvaluationResult) -> TaskRow:
        """The row of one evaluation (what coder_eval's ``eval_result_to_task_dict`` derives, from our result)."""
        usage = result.total_token_usage
        similarity = next((c.score for c in result.criteria if c.type == cls.SIMILARITY_TYPE), None)
        iteration = result.iterations[0] if result.iterations else None
        agent_s = result.stage_durations.get("agent")
        overage = result.expected_turns is not None and result.visible_turns > result.expected_turns
        return cls(
            task_id=result.task_id,
            replicate_index=result.replicate,
            status=result.final_status,
            weighted_score=result.weighted_score,
            duration=result.duration_s,
            iteration_count=result.iteration_count,
            tags=result.tags,
            task_path=result.task_config.source_file if result.task_config else None,
            iterations=[
                {
                    "iteration": iteration.iteration,
                    "duration_seconds": iteration.duration_seconds,
                    "command_count": len(iteration.commands),
                    "assistant_turn_count": iteration.assistant_turn_count,
                    "crashed": iteration.crashed,
                    "crash_reason": iteration.crash_reason,
                }
            ]
            if iteration is not None
            else [],
            agent_wall_ms=None if agent_s is None or not result.trajectory else round(agent_s * 1000, 1),
            tool_ms=iteration.tool_union_ms if iteration is not None else None,  # coder_eval's tool bucket
            setup_ms=result.setup_ms,
            grading_ms=result.grading_ms,
            model_used=result.model,
            reference_similarity=similarity,
            input_tokens=usage.uncached_input_tokens if usage else None,
            output_tokens=usage.output_tokens if usage else None,
            cache_creation_input_tokens=usage.cache_creation_input_tokens if usage else None,
            cache_read_input_tokens=usage.cache_read_input_tokens if usage else None,
            total_tokens=usage.total_tokens if usage else None,
            total_cost_usd=result.total_cost_usd,
            agent_cost_usd=result.agent_cost_usd,
            cost_complete=result.cost_complete,
            judge_cost_usd=result.judge_cost_usd,
            simulator_cost_usd=result.simulator_cost_usd,
            error_message=result.error,
            error_category=(result.error_details or {}).get("error_category"),
            expected_commands=result.expected_commands,
            actual_commands=result.actual_commands,
            commands_efficiency=result.commands_efficiency,
            agent_config=result.agent_config,
            max_turns_exhausted=result.max_turns_exhausted,
            expected_turns_overage=[result.visible_turns, result.expected_turns]
            if overage and result.expected_turns is not None
            else None,
            total_turns=result.turns,
            visible_turns=result.visible_turns,
            expected_turns=result.expected_turns,
            has_final_reply=iteration is not None and bool(iteration.agent_output),
            stopped_early=result.stopped_early,
            early_stop_reason=result.early_stop_reason,
            turns_remaining_at_stop=result.turns_remaining_at_stop,
            gate_threshold=result.early_stop.gate_threshold if result.early_stop else None,
            variant_id=result.variant_id,
            base_task_id=result.base_task_id,
            row_id=result.row_id,
            success=result.success,
            agent_type=result.agent_type,
            stage_durations=result.stage_durations,
            within_expected_turns=result.within_expected_turns,
            warnings=result.warnings,
            judge_input_tokens=result.judge_input_tokens,
            judge_output_tokens=result.judge_output_tokens,
            simulation=result.simulation,
            criteria=result.criteria,
            trace_id=result.trace_id,
            cost_source=usage.cost_source if usage else None,
            judge_token_usage=result.judge_token_usage,
            simulator_token_usage=result.simulator_token_usage,
        )

    @property
    def category(self) -> str:
        return STATUS_CATEGORY[self.status]


class Counts(BaseModel):
    """The status buckets of a set of rows (run.json's and variant.json's), computed from them."""

    @property
    def counted(self) -> list[tuple[str, float | None]]:
        """(status, score) of each row counted; the subclass says which."""
        raise NotImplementedError

    def _count(self, category: str) -> int:
        return sum(STATUS_CATEGORY[status] == category for status, _ in self.counted)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def tasks_run(self) -> int:
        return len(self.counted)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def tasks_succeeded(self) -> int:
        return self._count("succeeded")

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def tasks_failed(self) -> int:
        return self._count("failed")

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def tasks_error(self) -> int:
        return self._count("error")

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def tasks_not_graded(self) -> int:
        return self._count("not_graded")

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def tasks_measured(self) -> int:
        return sum(score is not None for _, score in self.counted)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def tasks_token_budget_exceeded(self) -> int:
        return sum(status == "TOKEN_BUDGET_EXCEEDED" for status, _ in self.counted)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def tasks_cost_budget_exceeded(self) -> int:
        return sum(status == "COST_BUDGET_EXCEEDED" for status, _ in self.counted)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def tasks_graded(self) -> int:
        return self.tasks_run - self.tasks_not_graded

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def pass_rate(self) -> float | None:
        """Succeeded over graded (an ERROR counts as a miss); None when nothing was graded."""
        return _rate(self.tasks_succeeded, self.tasks_graded) if self._rated else None

    @property
    def _rated(self) -> bool:
        """False when only ungraded rows were measured: no rate then."""
        return not (self.tasks_not_graded and not self.tasks_measured)


class RunSummary(Counts):
    """run.json: coder_eval's ``RunSummary``, with ours beside it (``passed``, ``suite``, ``experiment``...)."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)  # earlier names: validation_alias

    run_id: str
    start_time: str = Field(validation_alias="started_at")
    end_time: str = Field(validation_alias="finished_at")
    skipped_tasks: list[SkippedTask] = Field(default_factory=list)
    max_parallel: int = Field(default=1, ge=1)
    task_results: list[TaskRow] = Field(default_factory=list, validation_alias="tasks")
    framework_version: str = ""
    environment_info: dict[str, Any] = Field(default_factory=dict)
    # ours
    experiment: str | None = None
    dagster_run_id: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    variants: list[str] = Field(default_factory=list)
    passed: bool  # the run's verdict, the exit code's: every task succeeded and every suite threshold was met
    suite: list[dict[str, Any]] = Field(default_factory=list)  # per suite-threshold criterion and variant
    comparison: dict[str, Any] | None = None  # the variant comparison's page and figure
    # Repeated trials (ours): variant -> k ("1", "2", ...) -> figure; rows whose replicates disagree
    pass_at_k: dict[str, dict[str, float]] = Field(default_factory=dict)
    pass_hat_k: dict[str, dict[str, float]] = Field(default_factory=dict)
    flaky_rows: list[dict[str, Any]] = Field(default_factory=list)
    flaky: dict[str, Any] | None = None  # share, max_share (the experiment's gate), passed
    sequential: dict[str, Any] | None = None  # a sequential A/B's decision (docs/analysts.md)
    # Evaluations planned but never started ({task_id, variant_id, replicate, reason: budget | sequential})
    not_run: list[dict[str, Any]] = Field(default_factory=list)
    not_run_count: int = 0
    budget: dict[str, Any] | None = None  # the run-wide budget: max_usd, spent_usd, exhausted
    # Read from a run.json in coder_eval's form (no verdict): its experiment is its experiment.json's to name
    coder_eval_form: bool = Field(default=False, exclude=True)

    @property
    def flaky_gate(self) -> dict[str, Any] | None:
        """The flaky-rows gate, when the experiment set one and some row was repeated: share, max_share, passed."""
        flaky = self.flaky or {}
        return flaky if flaky.get("max_share") is not None and flaky.get("share") is not None else None

    @model_validator(mode="before")
    @classmethod
    def _earlier_skipped(cls, data: Any) -> Any:
        """Earlier run.json files listed skipped tasks by id."""
        if isinstance(data, dict) and any(isinstance(s, str) for s in data.get("skipped_tasks") or []):
            data = {
                **data,
                "skipped_tasks": [skipped_by_id(s) if isinstance(s, str) else s for s in data["skipped_tasks"]],
            }
        return data

    @model_validator(mode="before")
    @classmethod
    def _coder_eval_form(cls, data: Any) -> Any:
        """coder_eval's run.json (ours too once its ``--rebuild`` rewrote it) has no verdict: the one its exit code
        gives, every row a SUCCESS (``judged_with`` adds its suite gates); and its variants are its rows'."""
        if not isinstance(data, dict) or "passed" in data:
            return data
        rows = [row for row in data.get("task_results") or [] if isinstance(row, dict)]
        return {
            "variants": list(dict.fromkeys(row.get("variant_id") for row in rows)),
            **data,
            "passed": all(row.get("status") == "SUCCESS" for row in rows),
            "coder_eval_form": True,
        }

    def judged_with(self, suite: list[dict[str, Any]]) -> RunSummary:
        """This summary with the suite gates coder_eval keeps apart from its run.json (``SuiteRollup.gates``): one
        not met fails the run, as it fails coder_eval's."""
        met = all(threshold["passed"] for entry in suite for threshold in entry["thresholds"])
        return self.model_copy(update={"suite": suite, "passed": self.passed and met})

    @property
    def counted(self) -> list[tuple[str, float | None]]:
        return [(row.status, row.weighted_score) for row in self.task_results]

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def row_selection(self) -> RowSelection:
        """From the run's options (its RunSpec)."""
        options = self.options
        return RowSelection(
            split=options.get("split"),
            max_rows=options.get("sample"),
            sample_per_stratum=options.get("sample_per_stratum"),
        )

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def total_duration_seconds(self) -> float:
        return round((instant(self.end_time) - instant(self.start_time)).total_seconds(), 3)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def error_share(self) -> float | None:
        return _rate(self.tasks_error, self.tasks_graded) if self._rated else None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def tasks_cost_incomplete(self) -> int:
        return sum(not row.cost_complete for row in self.task_results)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def cost_complete(self) -> bool:
        return self.tasks_cost_incomplete == 0

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def agent_cost_usd(self) -> float | None:
        return _sum([row.agent_cost_usd for row in self.task_results])

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def eval_overhead_cost_usd(self) -> float | None:
        """What the judges and the simulated user cost."""
        return _sum([cost for row in self.task_results for cost in (row.judge_cost_usd, row.simulator_cost_usd)])

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def total_cost_usd(self) -> float | None:
        return _sum([row.total_cost_usd for row in self.task_results])

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def spend(self) -> Spend:
        """Ours: the run's tokens and cost, the agent apart from the judges and the simulated user."""
        return Spend.of(self.task_results)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def spend_by_variant(self) -> dict[str, Spend]:
        rows: dict[str, list[TaskRow]] = {}
        for row in self.task_results:
            rows.setdefault(row.variant_id, []).append(row)
        return {variant: Spend.of(group) for variant, group in rows.items()}

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def within_expected_turns_share(self) -> float | None:
        """Share of budgeted tasks within 1.5x expected_turns (failed ones count as over)."""
        budgeted = [row for row in self.task_results if row.expected_turns is not None]
        return sum(bool(row.within_expected_turns) for row in budgeted) / len(budgeted) if budgeted else None


class Spend(BaseModel):
    """Tokens and cost of some evaluations: the agent, the judges and the simulated user, each summed."""

    agent: TokenUsage | None = None
    judges: TokenUsage | None = None
    simulator: TokenUsage | None = None
    judge_verdicts_reused: int = 0  # verdicts taken from an earlier scoring: no call made, nothing in ``judges``
    agents_cut_short: int = 0  # TIMEOUT evaluations: their agent stopped before reporting all it spent (a floor)
    rows_cost_incomplete: int = 0  # rows whose cost is a floor for any reason (a cut turn never costed too)

    @classmethod
    def of(cls, rows: list[TaskRow]) -> Spend:
        return cls(
            agent=TokenUsage.summed([usage for row in rows if (usage := row.agent_token_usage) is not None]),
            judges=TokenUsage.summed([row.judge_token_usage for row in rows if row.judge_token_usage]),
            simulator=TokenUsage.summed([row.simulator_token_usage for row in rows if row.simulator_token_usage]),
            judge_verdicts_reused=sum(criterion.reused for row in rows for criterion in row.criteria),
            agents_cut_short=sum(row.status == "TIMEOUT" for row in rows),
            rows_cost_incomplete=sum(not row.cost_complete for row in rows),
        )

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def total_cost_usd(self) -> float | None:
        return _sum([usage.total_cost_usd for usage in (self.agent, self.judges, self.simulator) if usage])

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def cost_complete(self) -> bool:
        """False when some of the tokens have no cost (a part's sum is ``unknown`` even when others' costs are
        known), or an agent was cut short: the total is then a floor (as each row's ``cost_complete``)."""
        parts = (self.agent, self.judges, self.simulator)
        cut = self.agents_cut_short or self.rows_cost_incomplete
        return not cut and all(usage.priced_whole for usage in parts if usage and usage.spent)


def last_end(results: Iterable[EvaluationResult]) -> str:
    """When the last of the evaluations ended: a run's end where nothing recorded it (coder_eval's ``--rebuild``
    derives it so)."""
    return max((result.ended_at for result in results), key=instant)


def skipped_by_id(task_id: str) -> SkippedTask:
    """A task left out by ``skip: true``, as earlier versions recorded it (by id only)."""
    return SkippedTask(path=task_id, reason=f"skip: true (task_id={task_id})", task_id=task_id)


# ----------------------------------------------------------------------------- variants and the experiment

# Folding replicates: the worst status wins (error > failed > succeeded > not graded).
FOLD_ORDER = {"not_graded": 0, "succeeded": 1, "failed": 2, "error": 3}


class VariantResult(BaseModel):
    """One task under one variant, its replicates folded (coder_eval's ``VariantResult``)."""

    variant_id: str
    task_id: str
    weighted_score: float | None = None  # the mean over graded replicates (an ERROR counts 0.0)
    final_status: Status
    duration_seconds: float  # summed over the replicates that did not end in an error
    total_tokens: int | None = None
    iteration_count: int | None = None
    total_assistant_turns: int | None = None
    reference_similarity: float | None = None
    replicate_index: int = 0
    replicate_count: int = 1

    @classmethod
    def fold(cls, rows: list[TaskRow]) -> VariantResult:
        graded = [row for row in rows if row.category != "not_graded"]
        scores = [row.weighted_score or 0.0 for row in graded]
        tokens = [row.total_tokens for row in rows if row.total_tokens is not None]
        similarities = [row.reference_similarity for row in rows if row.reference_similarity is not None]
        return cls(
            variant_id=rows[0].variant_id,
            task_id=rows[0].task_id,
            weighted_score=sum(scores) / len(scores) if scores else None,
            final_status=max((row.status for row in rows), key=lambda s: FOLD_ORDER[STATUS_CATEGORY[s]]),
            duration_seconds=sum(row.duration for row in rows if row.category != "error"),
            total_tokens=sum(tokens) if tokens else None,
            iteration_count=round(sum(row.iteration_count for row in rows) / len(rows)),
            total_assistant_turns=round(sum(row.total_turns for row in rows) / len(rows)),
            reference_similarity=sum(similarities) / len(similarities) if similarities else None,
            replicate_count=len(rows),
        )


class VariantAggregate(Counts):
    """<variant>/variant.json: the variant's tasks, each with its replicates folded (coder_eval's ``VariantAggregate``).

    So ``tasks_run`` counts tasks, not evaluations as run.json does.
    """

    variant_id: str
    results: list[VariantResult] = Field(default_factory=list, exclude=True)

    @property
    def counted(self) -> list[tuple[str, float | None]]:
        return [(r.final_status, r.weighted_score) for r in self.results]

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def average_score(self) -> float | None:
        scores = [r.weighted_score for r in self.results if r.weighted_score is not None]
        return sum(scores) / len(scores) if scores else None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def average_duration(self) -> float:
        """Seconds per replicate, averaged over the tasks."""
        per_task = [r.duration_seconds / r.replicate_count for r in self.results]
        return sum(per_task) / len(per_task) if per_task else 0.0

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def total_tokens(self) -> int | None:
        tokens = [r.total_tokens for r in self.results if r.total_tokens is not None]
        return sum(tokens) if tokens else None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def replicate_count(self) -> int:
        return self.results[0].replicate_count if self.results else 1


class TaskSummary(BaseModel):
    """One task across the variants (coder_eval's ``TaskExperimentSummary``)."""

    task_id: str
    variant_results: list[VariantResult]

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def best_variant(self) -> str:
        """The highest score (a tie goes to the larger variant id, as coder_eval breaks it)."""
        best = self._best()
        return max(r.variant_id for r in best) if best else min(r.variant_id for r in self.variant_results)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def is_tie(self) -> bool:
        best = self._best()
        return len(best) > 1 if best else len(self.variant_results) > 1

    def _best(self) -> list[VariantResult]:
        """The variants at the highest score, a sum's last-bit error apart (a mean of 0.88 over two replicates and
        over three is one score), as a criterion's minimum is judged."""
        scores = [r.weighted_score for r in self.variant_results if r.weighted_score is not None]
        if not scores:
            return []
        top = max(scores)
        return [
            r
            for r in self.variant_results
            if r.weighted_score is not None and math.isclose(r.weighted_score, top, rel_tol=1e-12, abs_tol=1e-12)
        ]

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def score_spread(self) -> float:
        scores = [r.weighted_score for r in self.variant_results if r.weighted_score is not None]
        return max(scores) - min(scores) if scores else 0.0

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def replicate_count(self) -> int:
        return min(r.replicate_count for r in self.variant_results)


class ExperimentResult(BaseModel):
    """experiment.json: every task across the variants (coder_eval's ``ExperimentResult``); ``default`` without one."""

    experiment_id: str
    description: str = ""
    variant_ids: list[str]
    task_summaries: list[TaskSummary]
    variant_aggregates: dict[str, VariantAggregate]
    total_duration_seconds: float
    per_replicate_scores: dict[str, dict[str, list[float]]]

    @classmethod
    def of(
        cls, experiment_id: str, description: str, variant_ids: list[str], rows: list[TaskRow], seconds: float
    ) -> ExperimentResult:
        groups: dict[tuple[str, str], list[TaskRow]] = {}
        for row in rows:
            groups.setdefault((row.task_id, row.variant_id), []).append(row)
        folded = {key: VariantResult.fold(group) for key, group in groups.items()}
        by_task: dict[str, list[VariantResult]] = {}
        for (task_id, _), result in folded.items():
            by_task.setdefault(task_id, []).append(result)
        scores: dict[str, dict[str, list[float]]] = {variant: {} for variant in variant_ids}
        for (task_id, variant_id), group in groups.items():
            graded = [row.weighted_score or 0.0 for row in group if row.category != "not_graded"]
            scores.setdefault(variant_id, {})[task_id] = graded
        return cls(
            experiment_id=experiment_id,
            description=description,
            variant_ids=variant_ids,
            task_summaries=[TaskSummary(task_id=t, variant_results=r) for t, r in by_task.items()],
            variant_aggregates={
                v: VariantAggregate(variant_id=v, results=[r for r in folded.values() if r.variant_id == v])
                for v in variant_ids
            },
            total_duration_seconds=round(seconds, 3),
            per_replicate_scores=scores,
        )


# ----------------------------------------------------------------------------- suites


class CriterionStats(BaseModel):
    criterion_type: str
    rows_evaluated: int
    average_score: float
    error_count: int = 0


class FailedSample(BaseModel):
    row_id: str | None
    task_id: str
    final_status: Status
    weighted_score: float | None
    failure_reasons: list[str]
    error_message: str | None
    task_json_relpath: str
    replicate_index: int


class ThresholdCheck(BaseModel):
    metric: str
    min_value: float
    actual_value: float | None
    passed: bool


class CriterionAggregate(BaseModel):
    """One criterion over the suite's rows: its metrics and its ``suite_thresholds`` checks."""

    criterion_type: str
    description: str | None
    rows_total: int
    rows_excluded: int  # rows whose criteria never ran (an ERROR): they lower completion_rate
    metrics: dict[str, float]
    threshold_checks: list[ThresholdCheck]
    details: dict[str, Any] = Field(default_factory=dict)  # classification: labels, per_label, confusion
    error: str | None = None

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.threshold_checks)


class SuiteRollup(BaseModel):
    """<variant>/<suite_id>/suite.json: a dataset-backed task's rows under one variant (coder_eval's ``SuiteRollup``).

    Every replicate of every row is one row here.
    """

    suite_id: str
    variant_id: str
    rows_total: int
    rows_passed: int
    rows_failed: int
    rows_error: int
    rows_not_graded: int = 0
    average_weighted_score: float | None
    criterion_stats: list[CriterionStats]
    failed_samples: list[FailedSample]
    criterion_aggregates: list[CriterionAggregate]

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def rows_graded(self) -> int:
        return self.rows_total - self.rows_not_graded

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def pass_rate(self) -> float | None:
        return _rate(self.rows_passed, self.rows_graded)

    @computed_field  # type: ignore[prop-decorator]  # mypy takes no decorator on a property; pydantic's way
    @property
    def passed(self) -> bool:
        return all(aggregate.passed for aggregate in self.criterion_aggregates)

    def gates(self) -> list[dict[str, Any]]:
        """Its criteria's suite thresholds as run.json ``suite`` entries (a criterion's index is its aggregate's
        position): coder_eval's run.json has none, and its verdict counts them."""
        return [
            {
                "base_task_id": self.suite_id,
                "variant_id": self.variant_id,
                "criterion_index": index,
                "criterion_type": aggregate.criterion_type,
                "metrics": aggregate.metrics,
                "confusion_matrix": {},
                "thresholds": [
                    {"metric": c.metric, "minimum": c.min_value, "value": c.actual_value, "passed": c.passed}
                    for c in aggregate.threshold_checks
                ],
            }
            for index, aggregate in enumerate(self.criterion_aggregates)
        ]
