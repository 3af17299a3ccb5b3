"""The asset graph: task_definitions -> resolved_tasks -> sandbox_runs -> criteria_scores -> suite_metrics
-> variant_comparison, with their checks.

The three middle assets are partitioned by (row-task, variant). One Dagster
run covers many partitions. ``task_definitions`` (or, in a CLI run, the CLI
before it) resolves the files once into the run folder's snapshot; every
later step evaluates that snapshot. In each partitioned step every
evaluation runs its phase of the stage sequence (core/evaluation.py) on its
own thread, ``settings.options.concurrency`` of them at once
(``RunOptions.workers``): the sandbox_runs / criteria_scores boundary is the
only barrier. A failure is recorded on its own evaluation, never failing
the step.
"""

import warnings
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import dagster as dg

from ..core.chunking import partitions_per_run
from ..core.compare import NO_PREVIOUS_RUN
from ..core.compare.suite_plots import suite_float_metadata
from ..core.evaluation import Evaluation, Phase, remember_verdicts, restore_checkpoint, run_phase
from ..core.files import is_real_folder
from ..core.fingerprints import resolution_digest
from ..core.layout import (
    CHECKPOINT_FILE,
    COMPARISON_PAGE,
    PLAN_FILE,
    REPORT_FILE,
    RESULT_FILE,
    RUN_MD,
    RUN_VIEWER,
    SANDBOX_DIR,
    TABLES_DIR,
    cache_dir,
    load_result,
    read_record,
)
from ..core.problems import InvalidInput
from ..core.resolution import RowTask, definitions_metadata
from ..core.routing import routing_line
from ..core.run_context import RunContext, has_judge, missing_model_key, uses_model_route
from ..core.run_spec import RunOptions
from ..core.runs import OpenRun, RunPlan, in_parallel, plan_evaluations, preload_tables, started, summarize
from ..core.sandbox.engine import apply_default_docker_image
from ..core.scoring import kept_for_rescore
from .dagster_private import add_partition_metadata
from .names import AGENT_POOL, GROUP, PARTITIONS_TAG, SUITE_METRICS, VARIANT_COMPARISON
from .partitions import encode_id, ids_of, keys_digest, partition_key, row_task_partitions
from .resources import CoderEvalSettings

if TYPE_CHECKING:
    from ..core.compare.rows import RunRows

    # Our assets return no value. Dagster compares a return annotation with the bare class, so only the
    # type checker sees it subscripted.
    Materialized = dg.MaterializeResult[None]
else:
    Materialized = dg.MaterializeResult


def backfill_policy(per_run: int | None) -> dg.BackfillPolicy:
    """A backfill from the UI or GraphQL: as many partitions per run as Dagster allows (on two dimensions:
    one run per key of the smaller one), or runs of at most ``per_run`` (CODER_EVAL_PARTITIONS_PER_RUN)."""
    return dg.BackfillPolicy.multi_run(per_run) if per_run else dg.BackfillPolicy.single_run()


BACKFILL_POLICY = backfill_policy(partitions_per_run())
# Dagster marks the assets' backfill_policy parameter beta, and says so each time this module loads: in every
# run worker of `coder-eval dev` (the CLI filters it at start; a run worker starts from Dagster's own entry point).
# The notice is for library authors, not for our users.
warnings.filterwarnings("ignore", message=r"Parameter `backfill_policy` of function `asset` is currently in beta")


# What the three partitioned assets share.
class _Partitioned(TypedDict):
    group_name: str
    partitions_def: dg.MultiPartitionsDefinition
    backfill_policy: dg.BackfillPolicy


PARTITIONED: _Partitioned = {
    "group_name": GROUP,
    "partitions_def": row_task_partitions,
    "backfill_policy": BACKFILL_POLICY,
}


UNDEFINED = {"status": "UNDEFINED: no longer defined by the task files (nothing ran)"}
# Where a launched run's process gets its keys (coder-eval dev's environment, the daemon's, the run launcher's).
CREDENTIALS_DOC = 'docs/running.md, "How credentials travel"'


def _selected(context: dg.AssetExecutionContext, run: OpenRun) -> list[RowTask]:
    """The snapshot's row-tasks of this step's partitions. An undefined partition is a warning, and its
    materialization says so (a ranged step materializes every partition of its range). A run none of whose
    partitions resolve fails when that looks like the code location's settings (no row-task at all, or an
    experiment's variant where none is loaded); else its partitions are stale keys (a row, a variant, a file
    removed): the run goes on, so that its backfill's other chunks still get their summary."""
    index = {(rt.task_id, rt.variant_id): rt for rt in run.snapshot.row_tasks}
    wanted = [ids_of(key) for key in context.partition_keys]
    expected = context.run.tags.get(PARTITIONS_TAG)
    if expected is not None and keys_digest(wanted) != expected:
        raise dg.Failure(
            description="another run on this Dagster instance rearranged the partition keys this run covers while "
            f"it ran, so this step's range holds other row-tasks; finish the run with: coder-eval run --resume "
            f"{run.folder}"
        )
    found = [index[w] for w in wanted if w in index]
    undefined = [w for w in wanted if w not in index]
    for task_id, variant_id in undefined:
        context.log.warning(f"{task_id} [{variant_id}] is no longer defined by the task files{_why(run, variant_id)}")
    if wanted and not found and (not index or _why(run, wanted[0][1])):
        spec = run.plan.spec
        raise dg.Failure(
            description=f"none of the run's {len(wanted)} partition(s) is defined by the task files "
            f"(task paths: {', '.join(spec.task_paths) or 'none'}; experiment: {spec.experiment or 'none'})"
            + _why(run, wanted[0][1])
        )
    add_partition_metadata(context, {partition_key(*w): UNDEFINED for w in undefined})
    return found


def _why(run: OpenRun, variant_id: str) -> str:
    """The likely cause when a partition's variant comes from an experiment this run does not load."""
    if variant_id != "default" and run.plan.spec.experiment is None:
        return (
            f"; variant {variant_id!r} comes from an experiment and this code location loads none: "
            "set CODER_EVAL_EXPERIMENT to the experiment file"
        )
    return ""


def _evaluations(
    context: dg.AssetExecutionContext, settings: CoderEvalSettings, run: OpenRun, run_context: RunContext
) -> list[Evaluation]:
    row_tasks = _selected(context, run)
    options = settings.run_options()
    apply_default_docker_image(row_tasks, options.docker_image)
    return plan_evaluations(row_tasks, run, cache_dir(Path(options.runs_dir)), run_context)


def _by_partition(evaluations: list[Evaluation]) -> dict[Any, list[Evaluation]]:
    groups: dict[Any, list[Evaluation]] = {}
    for evaluation in evaluations:
        key = partition_key(evaluation.row_task.task_id, evaluation.row_task.variant_id)
        groups.setdefault(key, []).append(evaluation)
    return groups


@dg.asset(group_name=GROUP, description="The task, experiment and dataset files, loaded, validated and resolved.")
def task_definitions(
    context: dg.AssetExecutionContext, settings: CoderEvalSettings, run_context: dg.ResourceParam[RunContext]
) -> Materialized:
    run = settings.open(context, run_context)
    snapshot, spec = run.snapshot, run.plan.spec
    digest = resolution_digest(snapshot.fingerprints)
    return dg.MaterializeResult(
        metadata={
            **definitions_metadata(spec.task_paths, snapshot.row_tasks, snapshot.skipped),
            "invalid_file_problems": snapshot.invalid_task_files,
            "experiment": run.plan.experiment or "",
            "run_dir": dg.MetadataValue.path(str(run.folder.absolute())),
        },
        data_version=dg.DataVersion(digest),
    )


@dg.asset(
    **PARTITIONED,
    deps=[task_definitions],
    description="One row-task under one variant: dataset row, variant merge, -D overrides applied.",
)
def resolved_tasks(
    context: dg.AssetExecutionContext, settings: CoderEvalSettings, run_context: dg.ResourceParam[RunContext]
) -> Materialized:
    row_tasks = _selected(context, settings.open(context, run_context))
    add_partition_metadata(
        context, {partition_key(rt.task_id, rt.variant_id): resolved_metadata(rt) for rt in row_tasks}
    )
    return dg.MaterializeResult()


def resolved_metadata(row_task: RowTask) -> dict[str, Any]:
    """A resolved_tasks partition's metadata (a run's, or `coder-eval register`'s record): the file that
    defines it. The partition key names the task and variant; the rest of the resolution is in the run
    folder's snapshot and each task.json, not in every event (docs/operations.md, "What Dagster keeps"); an id
    the key escapes (`a...b` is `a..%2Eb`) is kept as written."""
    metadata: dict[str, Any] = {"source": dg.MetadataValue.path(str(row_task.task_file.absolute()))}
    for name, identifier in (("task_id", row_task.task_id), ("variant_id", row_task.variant_id)):
        if encode_id(identifier) != identifier:
            metadata[name] = identifier
    return metadata


@dg.asset(
    **PARTITIONED,
    deps=[resolved_tasks],
    pool=AGENT_POOL,
    description="Per evaluation: a fresh sandbox, pre_run, the agent loop under its run limits; "
    "the final sandbox is preserved.",
)
def sandbox_runs(
    context: dg.AssetExecutionContext, settings: CoderEvalSettings, run_context: dg.ResourceParam[RunContext]
) -> Materialized:
    run = settings.open(context, run_context)
    preload_tables()
    evaluations = _evaluations(context, settings, run, run_context)
    missing = missing_model_key((e.row_task for e in evaluations), run_context)
    if missing is not None:  # the CLI refuses such a run; launched, every evaluation was an ERROR of a green run
        raise dg.Failure(description=f"{missing}; give it to this run's process: {CREDENTIALS_DOC}")
    done = in_parallel(
        lambda e: run_context.hand_over(run_phase(restore_checkpoint(e), "sandbox")),
        evaluations,
        settings.run_options().workers,
        run_context.interrupt,
    )
    add_partition_metadata(
        context,
        {
            key: {"status": ", ".join(e.result.final_status if e.ended else "RAN" for e in group)}
            for key, group in _by_partition([e for e in done if not e.not_run]).items()
        },
    )
    return dg.MaterializeResult()


def _restore(evaluation: Evaluation, rescore: bool, options: RunOptions) -> Evaluation:
    """This process's hand-over from the sandbox step, else what was written; with the judge verdicts of an
    earlier scoring its judges may reuse (unless ``--no-reuse``).

    To rescore: the final task.json, keeping the results of the criteria a
    ``--only-criteria`` rescore does not re-run. A TIMEOUT or a budget breach
    has its criteria re-run like any other; only an ERROR keeps what it has.
    """
    reuse = not options.no_reuse
    if not rescore:
        handed = evaluation.context.take_over(evaluation)
        if handed is not None:
            return remember_verdicts(handed, reuse)
        restore_checkpoint(evaluation)
        return remember_verdicts(evaluation, reuse)
    path = evaluation.folder / RESULT_FILE
    if path.exists():
        evaluation.result = load_result(path)
        evaluation.sandbox_ready = is_real_folder(evaluation.folder / SANDBOX_DIR)
        if not evaluation.ended:
            only = options.only_criteria
            remember_verdicts(evaluation, reuse)
            evaluation.result.criteria = kept_for_rescore(evaluation.result.criteria, set(only) if only else None)
    else:
        evaluation.fail("ERROR", f"no {RESULT_FILE}: this evaluation never finished")
    return evaluation


@dg.asset(
    **PARTITIONED,
    deps=[sandbox_runs],
    description="Criteria scores, post_run, task success and the per-task reports; re-materialize to re-score.",
)
def criteria_scores(
    context: dg.AssetExecutionContext, settings: CoderEvalSettings, run_context: dg.ResourceParam[RunContext]
) -> Materialized:
    run = settings.open(context, run_context)
    phase: Phase = "rescore" if settings.rescore else "scoring"
    planned = _evaluations(context, settings, run, run_context)
    width = _scoring_width(settings.run_options().workers, run_context.judges.width, planned)
    if uses_model_route(e.row_task for e in planned):
        context.log.info(routing_line(run_context.route))
    options = settings.run_options()
    evaluations = [_restore(e, settings.rescore, options) for e in planned]
    _refuse_unsandboxed(evaluations, settings.rescore, run)
    done = in_parallel(lambda e: run_phase(e, phase), evaluations, width, run_context.interrupt)
    ran = [e for e in done if not e.not_run]  # the run-wide budget kept the others from starting
    add_partition_metadata(context, {key: _report_metadata(group) for key, group in _by_partition(ran).items()})
    return dg.MaterializeResult()


def _scoring_width(workers: int, judges: int, planned: list[Evaluation]) -> int:
    """``--concurrency`` evaluations at once, widened to ``--judge-concurrency`` when the run has a judge (its calls
    wait on the API); a run without one keeps ``-j 1`` too (heavy criteria, a fixed port, a database kept apart)."""
    return max(workers, judges) if any(has_judge(e.row_task) for e in planned) else workers


def _refuse_unsandboxed(evaluations: list[Evaluation], rescore: bool, run: OpenRun) -> None:
    """Scoring needs each evaluation's sandbox step: selected without sandbox_runs (a new run folder starts
    empty), the step fails saying so, instead of recording every evaluation as an ERROR in the history."""
    if rescore:
        return
    missing = [e for e in evaluations if "sandbox" not in e.result.phases_done and not e.skipped_by_budget()]
    if missing:
        raise dg.Failure(
            description=f"{len(missing)} of {len(evaluations)} evaluation(s) in {run.folder} have no "
            f"{CHECKPOINT_FILE}: sandbox_runs did not run for them. Materialize sandbox_runs with criteria_scores; "
            "to score a finished run again, `coder-eval rescore RUN_DIR`."
        )


def _report_metadata(group: list[Evaluation]) -> dict[str, Any]:
    """What the UI shows of a partition: status, score and duration (plotted) and the link to its report.

    Every entry is stored with each materialization, twice on SQLite (run
    shard and index): the rest of a result stays in task.json and the tables.
    """
    results = [e.result for e in group]
    return {
        "status": ", ".join(r.final_status for r in results),
        "score": dg.MetadataValue.float(sum(r.weighted_score for r in results) / len(results)),
        "duration_s": dg.MetadataValue.float(sum(r.duration_s for r in results)),
        "report": dg.MetadataValue.path(str((group[0].folder / REPORT_FILE).absolute())),
        **({"trace_id": ", ".join(r.trace_id for r in results if r.trace_id)} if results[0].trace_id else {}),
    }


SUITE_CHECKS = [
    dg.AssetCheckSpec(
        "suite_thresholds",
        asset=SUITE_METRICS,
        description="Every suite_thresholds minimum of every criterion of a dataset-backed task is met.",
    ),
    dg.AssetCheckSpec(
        "all_tasks_succeeded",
        asset=SUITE_METRICS,
        description="Every evaluation of the run succeeded (each by its gating criteria): the CLI's exit code 0.",
    ),
]


@dg.asset(
    group_name=GROUP,
    deps=[criteria_scores],
    check_specs=SUITE_CHECKS,
    description="Suite metrics and thresholds; run.json, run.md, the run viewer and the Parquet tables of the run.",
)
def suite_metrics(
    context: dg.AssetExecutionContext, settings: CoderEvalSettings, run_context: dg.ResourceParam[RunContext]
) -> Materialized:
    run = settings.open(context, run_context)
    options = settings.run_options()
    tables = Path(options.runs_dir) / TABLES_DIR
    summary = summarize(run, tables, options.workers, settings.rescore, run_context.written_result)
    if not settings.rescore:  # the run's span (derived ids): the first attempt's, or a later one's (a retry) under it
        attempt = None if context.run.run_id == run.plan.dagster_run_id else context.run.run_id
        run_context.telemetry.run_end(run.plan.run_id, run.plan.started_at, summary.results, summary.passed, attempt)
    thresholds = [t for entry in summary.suite for t in entry.thresholds]
    succeeded = sum(r.success for r in summary.results)
    share = succeeded / len(summary.results) if summary.results else 0.0
    invalid = run.snapshot.invalid_task_files  # a task file left out fails the run
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
            check_name="all_tasks_succeeded",
            passed=bool(summary.results) and succeeded == len(summary.results) and not invalid,
            metadata={
                "share": dg.MetadataValue.float(share),
                "passed": succeeded,
                "total": len(summary.results),
                "invalid_task_files": invalid,
            },
        ),
    ]
    return dg.MaterializeResult(
        metadata={
            "passed": summary.passed,
            "run_id": run.plan.run_id,
            "run_dir": dg.MetadataValue.path(str(run.folder.absolute())),
            "run_md": dg.MetadataValue.path(str((run.folder / RUN_MD).absolute())),
            "viewer": dg.MetadataValue.path(str((run.folder / RUN_VIEWER).absolute())),
            "tasks": len(summary.results),
            **{key: dg.FloatMetadataValue(value) for key, value in suite_float_metadata(summary.results).items()},
        },
        check_results=checks,
    )


# ----------------------------------------------------------------------------- variant_comparison

LOOKBACK = 30  # earlier suite_metrics materializations searched for the same task set

REGRESSION_CHECK = dg.AssetCheckSpec(
    "no_significant_regression",
    asset=VARIANT_COMPARISON,
    description="No variant is significantly worse than in the previous run of the same task set "
    "(McNemar exact p < 0.05 with a negative difference in success rate fails).",
)


def _earlier_run_dirs(instance: dg.DagsterInstance, current: Path) -> list[Path]:
    """Run folders of the latest suite_metrics materializations, newest first, this run's own left out."""
    records = instance.fetch_materializations(SUITE_METRICS, limit=LOOKBACK).records
    folders = []
    for record in records:
        materialization = record.asset_materialization
        entry = materialization.metadata.get("run_dir") if materialization else None
        if entry is not None and Path(str(entry.value)).resolve() != current.resolve():
            folders.append(Path(str(entry.value)))
    return folders


def previous_run(instance: dg.DagsterInstance, current: "RunRows", started_at: datetime) -> "RunRows | None":
    """The run of the same task set that started last before this one (``started_at``), if the instance knows one.

    By start, not by materialization: a rescore (or a resume) of an older run
    materializes it again, after the runs that followed it.
    """
    from ..core.compare.regression import same_task_set
    from ..core.compare.rows import CompareError, read_run_rows

    for folder in _started_before(_earlier_run_dirs(instance, current.run_dir), started_at):
        try:
            candidate = read_run_rows(folder)
        except (CompareError, InvalidInput):  # a run folder since deleted, emptied or damaged: not this run's fault
            continue
        if same_task_set(candidate, current):
            return candidate
    return None


def _started_before(folders: list[Path], moment: datetime) -> list[Path]:
    """The run folders started before ``moment``, the latest first (those whose plan is gone or unreadable left out)."""
    starts = {}
    for folder in dict.fromkeys(folders):
        try:
            starts[folder] = started(read_record(folder / PLAN_FILE, RunPlan))
        except (OSError, InvalidInput):
            continue
    return sorted((folder for folder, start in starts.items() if start < moment), key=starts.__getitem__, reverse=True)


@dg.asset(
    group_name=GROUP,
    deps=[suite_metrics],
    check_specs=[REGRESSION_CHECK],
    description="Paired statistics of every variant against the experiment's first, on the run just finished.",
)
def variant_comparison(
    context: dg.AssetExecutionContext, settings: CoderEvalSettings, run_context: dg.ResourceParam[RunContext]
) -> Materialized:
    opened = settings.open(context, run_context)
    run_dir = opened.folder
    from ..core.compare.rows import CompareError, read_run_rows

    try:
        current = read_run_rows(run_dir)
    except CompareError as exc:  # a run that evaluated nothing has nothing to compare and nothing regressed
        return dg.MaterializeResult(
            metadata={"comparison": dg.MetadataValue.md(f"nothing to compare: {exc}")},
            check_results=[_check_result(True, {"previous_run": "this run has no evaluations"})],
        )
    if len(current.variants) < 2 and not _earlier_run_dirs(context.instance, run_dir):
        # Nothing to pair with: done without importing pandas and scipy (a second of every first run).
        return dg.MaterializeResult(
            metadata={
                "comparison": dg.MetadataValue.md("one variant and no earlier run: nothing to compare yet"),
                **_rate_metadata(current.success_rates(), run_dir),
            },
            check_results=[_check_result(True, {"previous_run": NO_PREVIOUS_RUN})],
        )
    # Imported here: pandas and scipy would otherwise load with the code location, before every run.
    from ..core.compare.analysis import compare_variants
    from ..core.compare.regression import comparison_table, regression_verdict

    table = comparison_table(compare_variants(current))
    before = previous_run(context.instance, current, started(opened.plan))
    verdict = regression_verdict(before, current)
    page = run_dir / COMPARISON_PAGE
    check_metadata = {key: _check_value(key, value) for key, value in verdict.details.items()}
    return dg.MaterializeResult(
        metadata={
            "comparison": dg.MetadataValue.md(table),
            **_rate_metadata(current.success_rates(), run_dir),
            **({"page": dg.MetadataValue.path(str(page.absolute()))} if page.is_file() else {}),
        },
        check_results=[_check_result(verdict.passed, check_metadata)],
    )


def _rate_metadata(rates: dict[str, float | None], run_dir: Path) -> dict[str, Any]:
    """Each variant's ``success_rate.<variant>`` (null when every evaluation was an ERROR, no verdict to rate: a 0
    would plot a broken machine as the model's fall), plotted run by run, and the run folder."""
    return {
        **{f"success_rate.{variant}": dg.FloatMetadataValue(rate) for variant, rate in rates.items()},
        "run_dir": dg.MetadataValue.path(str(run_dir.absolute())),
    }


def _check_value(key: str, value: Any) -> Any:
    """The regression check's rows as Markdown, its difference a float also when there is none (no row paired)."""
    if key.endswith("_rows"):
        return dg.MetadataValue.md(value)
    return dg.FloatMetadataValue(value) if key.endswith(".difference") else value


def _check_result(passed: bool, metadata: dict[str, Any]) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(check_name=REGRESSION_CHECK.name, passed=passed, metadata=metadata)


ASSETS = [task_definitions, resolved_tasks, sandbox_runs, criteria_scores, suite_metrics, variant_comparison]
