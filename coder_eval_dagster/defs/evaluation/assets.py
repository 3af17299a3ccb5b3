"""The asset graph: task_definitions -> resolved_tasks -> sandbox_runs -> criteria_scores -> suite_metrics.

The three middle assets are partitioned by (row-task, variant). One Dagster
run covers many partitions; each op works through all of them with a
bounded thread pool (``CoderEvalSettings.concurrency``), and a failure is
recorded on its own evaluation, never failing the step. Stages hand over
through the run folder, so no asset value goes through an IO manager.
"""

import hashlib
import json
from pathlib import Path
from typing import Any

import dagster as dg

from ...core import progress
from ...core.evaluation import (
    RESULT_FILE,
    STATE_FILE,
    Evaluation,
    decide,
    finish,
    load_result,
    run_agent,
    run_post_run,
    run_pre_run,
    save_state,
    score,
    setup_sandbox,
)
from ...core.fingerprints import fingerprints
from ...core.resolution import Resolution, RowTask
from ...core.runs import RunPlan, cache_dir, in_parallel, plan_evaluations, resolve_plan, summarize
from ...core.sandbox.engine import default_docker_image
from .partitions import ids_of, partition_key, row_task_partitions
from .resources import CoderEvalSettings

GROUP = "coder_eval"
AGENT_POOL = "agent_api"
# The lists of evaluations handed between the ops of one graph asset stay in
# memory: pickling them to disk at every op boundary cost about 1 ms per
# evaluation, and every stage's real output is already on disk in the run folder.
EVALUATIONS_IO = "evaluations_io"
EVALUATIONS_OUT = dg.Out(io_manager_key=EVALUATIONS_IO)
# A backfill from the UI or GraphQL carries as many partitions per run as
# Dagster allows (on two dimensions: one run per key of the smaller one).
SINGLE_RUN = dg.BackfillPolicy.single_run()
Context = dg.OpExecutionContext | dg.AssetExecutionContext


def _resolve(context: Context, plan: RunPlan) -> Resolution:
    """The plan's row-tasks; a file that does not validate is logged and skipped, like the sensor does."""
    resolution = resolve_plan(plan)
    for problem in resolution.problems[:50]:
        context.log.warning(f"skipped: {problem}")
    return resolution


def _selected(resolution: Resolution, keys: list[Any]) -> tuple[list[RowTask], list[tuple[str, str]]]:
    """The row-tasks of the run's partitions, and the (task, variant) pairs no file defines any more."""
    index = {(rt.task_id, rt.variant_id): rt for rt in resolution.row_tasks}
    wanted = [ids_of(key) for key in keys]
    return [index[w] for w in wanted if w in index], [w for w in wanted if w not in index]


def _digest(row_tasks: list[RowTask]) -> str:
    """One data version for the whole task set: the row-tasks' content fingerprints."""
    return hashlib.sha256(json.dumps(sorted(fingerprints(row_tasks).items())).encode()).hexdigest()[:16]


def _add_partition_metadata(context: Context, metadata: dict[Any, dict[str, Any]]) -> None:
    """Metadata for each partition's materialization event, handed over once per step.

    The public ``add_asset_metadata(partition_key=...)`` re-reads every dynamic
    partition from the instance to validate each key, and every call copies the
    step's whole metadata map: a run over N partitions paid O(N^2). Our keys
    come from ``context.partition_keys``, so the step's accumulator gets them
    in one update; if those internals ever move, the public call is used.
    """
    op_context = context.op_execution_context if isinstance(context, dg.AssetExecutionContext) else context
    step = op_context.get_step_execution_context()
    try:
        from dagster._core.execution.context.metadata_logging import AssetMetadataHandle, OutputMetadataAccumulator

        current = step._metadata_accumulator.per_output_metadata
        added = {
            AssetMetadataHandle(asset_key=step.assets_def.key, partition_key=key): value
            for key, value in metadata.items()
        }
        step._metadata_accumulator = OutputMetadataAccumulator(per_output_metadata={**current, **added})
    except (ImportError, AttributeError, TypeError):
        for key, value in metadata.items():
            step.add_asset_metadata(value, partition_key=key)


@dg.asset(group_name=GROUP, description="The task, experiment and dataset files, loaded and validated.")
def task_definitions(context: dg.AssetExecutionContext, settings: CoderEvalSettings) -> dg.MaterializeResult:
    _, plan = settings.run_folder(context)
    resolution = _resolve(context, plan)
    return dg.MaterializeResult(
        metadata={
            "row_tasks": len(resolution.row_tasks),
            "skipped": len(resolution.skipped),
            "invalid_file_problems": len(resolution.problems),
            "variants": len({rt.variant_id for rt in resolution.row_tasks}),
            "task_paths": ", ".join(settings.task_paths),
        },
        data_version=dg.DataVersion(_digest(resolution.row_tasks)),
    )


@dg.asset(
    group_name=GROUP,
    partitions_def=row_task_partitions,
    backfill_policy=SINGLE_RUN,
    deps=[task_definitions],
    description="One row-task under one variant: dataset row, variant merge, -D overrides applied.",
)
def resolved_tasks(context: dg.AssetExecutionContext, settings: CoderEvalSettings) -> dg.MaterializeResult:
    _, plan = settings.run_folder(context)
    row_tasks, missing = _selected(_resolve(context, plan), context.partition_keys)
    _add_partition_metadata(
        context,
        {
            partition_key(rt.task_id, rt.variant_id): {
                "task_id": rt.task_id,
                "variant_id": rt.variant_id,
                "row_id": rt.row_id or "",
                "replicates": rt.replicates,
                "agent_type": rt.task.agent.resolved_type,
                "source": str(rt.source),
            }
            for rt in row_tasks
        },
    )
    for task_id, variant_id in missing:
        context.log.warning(f"{task_id} [{variant_id}] is no longer defined by the task files")
    return dg.MaterializeResult()


# ----------------------------------------------------------------------------- sandbox_runs


def _evaluations(context: Context, settings: CoderEvalSettings) -> list[Evaluation]:
    run_dir, plan = settings.run_folder(context)
    row_tasks, missing = _selected(_resolve(context, plan), context.partition_keys)
    for task_id, variant_id in missing:
        context.log.warning(f"skipping {task_id} [{variant_id}]: no task file defines it any more")
    default_docker_image(row_tasks, settings.docker_image)
    return plan_evaluations(row_tasks, plan.run_id, run_dir, cache_dir(Path(settings.runs_dir)))


@dg.op(
    ins={"start": dg.In(dg.Nothing)},
    out=EVALUATIONS_OUT,
    description="A fresh sandbox per evaluation: templates, then the venv.",
)
def setup_sandboxes(context: dg.OpExecutionContext, settings: CoderEvalSettings) -> list[Evaluation]:
    return in_parallel(setup_sandbox, _evaluations(context, settings), settings.workers())


@dg.op(out=EVALUATIONS_OUT, description="pre_run commands, in order, in each sandbox.")
def pre_run(settings: CoderEvalSettings, evaluations: list[Evaluation]) -> list[Evaluation]:
    return in_parallel(run_pre_run, evaluations, settings.workers())


@dg.op(pool=AGENT_POOL, out=dg.Out(dg.Nothing), description="The agent loop under its run limits.")
def run_agents(context: dg.OpExecutionContext, settings: CoderEvalSettings, evaluations: list[Evaluation]) -> None:
    done = in_parallel(lambda e: save_state(run_agent(e)), evaluations, settings.workers())
    _add_partition_metadata(
        context,
        {
            key: {
                "replicates": len(group),
                "status": ", ".join(e.result.final_status if e.ended else "RAN" for e in group),
            }  # type: ignore[union-attr]
            for key, group in _by_partition(done).items()
        },
    )


def _by_partition(evaluations: list[Evaluation]) -> dict[Any, list[Evaluation]]:
    groups: dict[Any, list[Evaluation]] = {}
    for evaluation in evaluations:
        key = partition_key(evaluation.row_task.task_id, evaluation.row_task.variant_id)
        groups.setdefault(key, []).append(evaluation)
    return groups


@dg.graph_asset(
    group_name=GROUP,
    partitions_def=row_task_partitions,
    backfill_policy=SINGLE_RUN,
    ins={"resolved_tasks": dg.AssetIn(dagster_type=dg.Nothing)},
    description="Sandbox setup, pre_run and the agent loop; the final sandbox is preserved.",
)
def sandbox_runs(resolved_tasks) -> None:
    return run_agents(pre_run(setup_sandboxes(resolved_tasks)))


# ----------------------------------------------------------------------------- criteria_scores


def _restore(evaluation: Evaluation, rescore: bool) -> Evaluation:
    """Reload what the sandbox stages wrote (or, to rescore, the final task.json)."""
    path = evaluation.folder / (RESULT_FILE if rescore else STATE_FILE)
    if path.exists():
        evaluation.result = load_result(path)
        evaluation.sandbox_ready = (evaluation.folder / "sandbox").is_dir()
        if rescore and evaluation.result.error is None:
            evaluation.result.criteria = []
    else:
        evaluation.fail("ERROR", f"no {path.name}: the sandbox stage did not run for this evaluation")
    return evaluation


@dg.op(
    ins={"start": dg.In(dg.Nothing)},
    out=EVALUATIONS_OUT,
    description="Every criterion against the preserved sandbox and trajectory.",
)
def score_criteria(context: dg.OpExecutionContext, settings: CoderEvalSettings) -> list[Evaluation]:
    evaluations = [_restore(e, settings.rescore) for e in _evaluations(context, settings)]
    return in_parallel(score, evaluations, settings.workers())


def _finish_one(evaluation: Evaluation, rescore: bool) -> Evaluation:
    if not rescore:
        run_post_run(evaluation)
    decide(evaluation.result, evaluation.task)  # type: ignore[arg-type]
    finish(evaluation)
    progress.emit("finished", task_id=evaluation.row_task.task_id, status=evaluation.result.final_status)  # type: ignore[union-attr]
    return evaluation


@dg.op(
    out=dg.Out(dg.Nothing), description="post_run commands (never change the verdict), then task.json and task.html."
)
def post_run_and_report(
    context: dg.OpExecutionContext, settings: CoderEvalSettings, evaluations: list[Evaluation]
) -> None:
    done = in_parallel(lambda e: _finish_one(e, settings.rescore), evaluations, settings.workers())
    _add_partition_metadata(context, {key: _report_metadata(group) for key, group in _by_partition(done).items()})


def _report_metadata(group: list[Evaluation]) -> dict[str, Any]:
    results = [e.result for e in group if e.result is not None]
    return {
        "status": ", ".join(r.final_status for r in results),
        "score": dg.MetadataValue.float(sum(r.weighted_score for r in results) / len(results)),
        "duration_s": dg.MetadataValue.float(sum(r.duration_s for r in results)),
        "report": dg.MetadataValue.path(str(group[0].folder / "task.html")),
    }


@dg.graph_asset(
    group_name=GROUP,
    partitions_def=row_task_partitions,
    backfill_policy=SINGLE_RUN,
    ins={"sandbox_runs": dg.AssetIn(dagster_type=dg.Nothing)},
    description="Criteria scores, task success and the per-task reports; re-materialize to re-score.",
)
def criteria_scores(sandbox_runs) -> None:
    return post_run_and_report(score_criteria(sandbox_runs))


# ----------------------------------------------------------------------------- suite_metrics

SUITE_CHECKS = [
    dg.AssetCheckSpec(
        "suite_thresholds",
        asset="suite_metrics",
        description="Every suite_thresholds minimum of every classification criterion is met.",
    ),
    dg.AssetCheckSpec(
        "gating_tasks_passed", asset="suite_metrics", description="Every gating task of the run succeeded."
    ),
]


@dg.asset(
    group_name=GROUP,
    deps=[criteria_scores],
    check_specs=SUITE_CHECKS,
    description="Suite metrics and thresholds; run.json, run.md and the Parquet tables of the run.",
)
def suite_metrics(context: dg.AssetExecutionContext, settings: CoderEvalSettings) -> dg.MaterializeResult:
    run_dir, plan = settings.run_folder(context)
    summary = summarize(run_dir, plan, _resolve(context, plan), Path(settings.runs_dir) / "tables")
    thresholds = [t for entry in summary.suite for t in entry.thresholds]
    succeeded = sum(r.success for r in summary.results)
    share = succeeded / len(summary.results) if summary.results else 1.0
    checks = [
        dg.AssetCheckResult(
            check_name="suite_thresholds",
            passed=all(t.passed for t in thresholds),
            metadata={
                f"{e.base_task_id}[{e.variant_id}].{e.criterion_index}.{t.metric}": f"{t.value:.4f} (min {t.minimum:g})"
                for e in summary.suite
                for t in e.thresholds
            }
            or {"thresholds": "none"},
        ),
        dg.AssetCheckResult(
            check_name="gating_tasks_passed",
            passed=succeeded == len(summary.results),
            metadata={"share": dg.MetadataValue.float(share), "passed": succeeded, "total": len(summary.results)},
        ),
    ]
    return dg.MaterializeResult(
        metadata={
            "passed": summary.passed,
            "run_id": plan.run_id,
            "run_dir": dg.MetadataValue.path(str(run_dir)),
            "run_md": dg.MetadataValue.path(str(run_dir / "run.md")),
            "tasks": len(summary.results),
        },
        check_results=checks,
    )


ASSETS = [task_definitions, resolved_tasks, sandbox_runs, criteria_scores, suite_metrics]
