"""A run: its folder, its evaluations, and its summary (run.json, run.md, tables)."""

from __future__ import annotations

import importlib
import logging
import os
import pickle
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from . import safe_unpickle
from .budget import NOT_RUN_BUDGET, RunBudget, evaluation_key
from .evaluation import Evaluation, new_evaluation, utc_now
from .files import is_real_folder
from .fingerprints import fingerprints
from .layout import (
    CHECKPOINT_FILE,
    EARLIER_FIRST_REPLICATE,
    FIRST_REPLICATE,
    OPEN_LOCK_FILE,
    PLAN_FILE,
    RESULT_FILE,
    RUN_FILE,
    SANDBOX_DIR,
    SNAPSHOT_FILE,
    evaluation_files,
    is_run_folder,
    load_summary,
    point_latest,
    read_json,
    read_record,
    replicates,
    run_results,
    run_table_files,
    write_atomically,
)
from .models.experiment import Sequential
from .models.prices import ModelPrice
from .models.report import RunSummary, TaskRow
from .models.report import SkippedTask as ReportedSkip
from .models.results import EvaluationResult, instant
from .problems import DOCUMENT, InvalidInput, Problem
from .reports.run_summary import run_passed
from .resolution import Resolution, RowTask, SkippedTask, resolve
from .run_context import RunContext
from .run_lock import exclusively
from .run_spec import RunSpec
from .sandbox.process import Interrupt
from .suite import SuiteEntry, suite_entries, suite_json
from .valid_utf8 import valid_utf8

log = logging.getLogger(__name__)

TIMESTAMP = "%Y-%m-%dT%H-%M-%SZ"
T = TypeVar("T")
Written = Callable[[Path], EvaluationResult | None]  # a result this process wrote, by its task.json path


class RunPlan(BaseModel):
    """What a run was asked to do: written first, read by every later step and by rescore."""

    run_id: str
    started_at: str
    spec: RunSpec
    experiment: str | None = None  # the experiment's id
    experiment_description: str = ""
    dagster_run_id: str | None = None
    first_replicate: int = EARLIER_FIRST_REPLICATE  # replicate folders from 00 (01 in runs written before)
    # Made by a Dagster launch (a backfill, a schedule or sensor tick), not the CLI: its runs evaluate the partitions
    # they were given, a selection of the snapshot's row-tasks, and several processes share the folder.
    launched: bool = False
    # Where the run was started: the spec's relative paths and the base layer are read from there by a rescore
    # started elsewhere (None in plans written before).
    started_in: str | None = None


@dataclass
class Snapshot:
    """The run's resolution, made once: every step evaluates exactly this, whatever the files say later."""

    row_tasks: list[RowTask]
    skipped: list[SkippedTask]
    problems: list[Problem]
    filtered: dict[str, int]
    fingerprints: dict[tuple[str, str], str]
    prices: dict[str, ModelPrice] | None = None  # the user's price file; None in snapshots written before
    sequential: Sequential | None = None  # the experiment's sequential A/B (its batches are on the row tasks)
    max_flaky_share: float | None = None  # the experiment's flaky-rows gate
    budget_usd: float | None = None  # the experiment's budget.max_usd (--max-usd, in the plan's spec, wins)

    @property
    def invalid_task_files(self) -> int:
        """The task files that did not validate: those a folder held are left out (``skipped``, marked invalid),
        their problems in the reason; a named one's problems stay the run's."""
        return sum(entry.invalid for entry in self.skipped) + len({problem.path for problem in self.problems})

    @classmethod
    def of(cls, resolution: Resolution) -> Snapshot:
        experiment = resolution.experiment.model if resolution.experiment else None
        return cls(
            resolution.row_tasks,
            resolution.skipped,
            resolution.problems,
            resolution.filtered,
            fingerprints(resolution.row_tasks),
            resolution.prices,
            experiment.sequential if experiment else None,
            experiment.max_flaky_share if experiment else None,
            experiment.budget.max_usd if experiment and experiment.budget else None,
        )


@dataclass
class OpenRun:
    folder: Path
    plan: RunPlan
    snapshot: Snapshot

    def replicates(self, row_task: RowTask) -> range:
        return replicates(row_task.replicates, self.plan.first_replicate)

    @property
    def max_usd(self) -> float | None:
        """The run-wide budget: ``--max-usd`` (kept in the plan, so a resume keeps it), else the experiment's."""
        return self.plan.spec.max_usd or self.snapshot.budget_usd


def experiment_id(resolution: Resolution) -> str | None:
    return resolution.experiment.model.experiment_id if resolution.experiment else None


def open_run(
    folder: Path,
    spec: RunSpec,
    dagster_run_id: str | None = None,
    resolution: Resolution | None = None,
    launched: bool = False,
) -> OpenRun:
    """Create a run folder's plan and snapshot (resolving the spec unless the caller already did); ``latest`` links
    to it."""
    resolution = resolution if resolution is not None else resolve(spec)
    folder.mkdir(parents=True, exist_ok=True)
    plan = RunPlan(
        run_id=folder.name,
        started_at=utc_now(),
        spec=spec,
        experiment=experiment_id(resolution),
        experiment_description=(resolution.experiment.model.description or "") if resolution.experiment else "",
        dagster_run_id=dagster_run_id,
        first_replicate=FIRST_REPLICATE,
        launched=launched,
        started_in=str(Path.cwd()),
    )
    run = OpenRun(folder, plan, Snapshot.of(resolution))
    write_atomically(folder / SNAPSHOT_FILE, pickle.dumps(run.snapshot, protocol=pickle.HIGHEST_PROTOCOL))
    write_atomically(folder / PLAN_FILE, plan.model_dump_json(indent=2).encode())
    point_latest(folder.parent, folder)
    return run


def resnapshot(run: OpenRun, present: set[str]) -> tuple[Resolution, list[RowTask], list[SkippedTask]]:
    """Resolve the run's spec again (a rescore applies the task files as they are now), with the row-tasks it
    kept as the run had them (:func:`gone_from_files`; ``present``: :func:`evaluated`). Only the run's evaluated
    row-tasks stay, and what the run left out stays left out as it recorded it: a task fixed since is not part
    of this run (``run`` it anew). A task path gone since defines nothing now. Relative paths are read from the
    folder the run was started in, wherever the rescore is. The run keeps it: :func:`keep_snapshot`. Also the
    task files the run read that do not validate now (their evaluations are among the kept ones)."""
    started_in, spec = _started_in(run.plan), run.plan.spec
    spec = spec.model_copy(
        update={
            "task_paths": [str(path) for path in _task_paths(run.plan) if path.exists()],
            "experiment": None if spec.experiment is None else str(started_in / spec.experiment),
            "prices": None if spec.prices is None else str(started_in / spec.prices),
        }
    )
    resolution = resolve(spec, started_in=started_in) if spec.selects_anything else Resolution()
    resolution.skip_invalid_folder_files()
    recorded = {(rt.variant_id, rt.task_id): rt.source for rt in run.snapshot.row_tasks}
    resolution.row_tasks = [_named_as_the_run_named_it(rt, recorded, started_in) for rt in resolution.row_tasks]
    kept: list[RowTask] = []
    left_out = {_left_out_as(entry, started_in) for entry in run.snapshot.skipped}
    now_invalid = [entry for entry in resolution.skipped if _left_out_as(entry, started_in) not in left_out]
    if not resolution.problems:
        kept = gone_from_files(run, resolution, present)
        resolution.row_tasks = [
            rt for rt in [*resolution.row_tasks, *kept] if f"{rt.variant_id}/{rt.task_id}" in present
        ]
        resolution.skipped = list(run.snapshot.skipped)
    return resolution, kept, now_invalid


def _named_as_the_run_named_it(row_task: RowTask, sources: dict[tuple[str, str], Path], started_in: Path) -> RowTask:
    """A row-task's task file by the path the run recorded (`big.yaml`, from the folder it was started in), not the
    absolute one a rescore reads it by: run.json's task_path stays what scripts keyed on."""
    recorded = sources.get((row_task.variant_id, row_task.task_id))
    if recorded is None or recorded.is_absolute() or not row_task.source.is_absolute():
        return row_task
    relative = Path(os.path.relpath(row_task.source, started_in.absolute()))
    return replace(row_task, source=relative, read_from=started_in.absolute())


def keep_snapshot(run: OpenRun, resolution: Resolution, present: set[str]) -> None:
    """The rescore's resolution as the run's snapshot, once nothing refuses the rescore; with the row-tasks the run
    never started (its budget spent, its sequential A/B decided), still its ``not_run`` (they were dropped, and a
    FAILED run for its budget rescored as PASSED)."""
    unstarted = [rt for rt in run.snapshot.row_tasks if f"{rt.variant_id}/{rt.task_id}" not in present]
    run.snapshot = Snapshot.of(resolution)
    run.snapshot.row_tasks = [*run.snapshot.row_tasks, *unstarted]
    write_atomically(run.folder / SNAPSHOT_FILE, pickle.dumps(run.snapshot, protocol=pickle.HIGHEST_PROTOCOL))


def without_sandbox(run_dir: Path, present: set[str]) -> list[Path]:
    """The evaluation folders of ``present`` row-tasks whose preserved sandbox is gone (cleaned up since the run),
    an ERROR apart (it keeps its result; it may never have had one): a rescore would grade an empty folder."""
    missing = []
    for path in evaluation_files(run_dir, RESULT_FILE):
        folder = path.parent
        if folder.parent.relative_to(run_dir).as_posix() not in present or is_real_folder(folder / SANDBOX_DIR):
            continue
        recorded = read_json(path)
        if not isinstance(recorded, dict) or recorded.get("final_status") != "ERROR":
            missing.append(folder)
    return missing


def gone_paths(run: OpenRun) -> str:
    """`` (gone since the run: tasks/x.yaml)``: the task paths the run named that are not there now, or nothing."""
    gone = [str(path) for path in _task_paths(run.plan) if not path.exists()]
    return f" (gone since the run: {', '.join(gone)})" if gone else ""


def _left_out_as(entry: SkippedTask, started_in: Path) -> tuple[str, str]:
    """A left-out file and why, its path read from where the run started: the run recorded it as given
    (``b.yaml``), a rescore resolves it from elsewhere (an absolute path)."""
    return os.path.normpath(started_in / entry.path), entry.reason


def _started_in(plan: RunPlan) -> Path:
    """The folder the run was started in, when this machine has it (a run folder copied from another machine, or
    rescored from another checkout, reads from the current folder, as runs written before it was kept)."""
    folder = Path(plan.started_in or ".")
    return folder if folder.is_dir() else Path()


def _task_paths(plan: RunPlan) -> list[Path]:
    """The task files and folders the run named, as read from where it was started."""
    return [_started_in(plan) / path for path in plan.spec.task_paths]


def evaluated(run_dir: Path) -> set[str]:
    """``<variant_id>/<task_id>`` of every row-task with an evaluation in the run folder."""
    return {path.parent.parent.relative_to(run_dir).as_posix() for path in evaluation_files(run_dir, CHECKPOINT_FILE)}


def gone_from_files(run: OpenRun, resolution: Resolution, present: set[str]) -> list[RowTask]:
    """The run's evaluated row-tasks the files no longer resolve to (a dataset row, a task or a variant removed
    since): a rescore scores them as the run resolved them, so that its evaluations, run.json, tables and suite
    metrics stay one set."""
    resolved = {(rt.variant_id, rt.task_id) for rt in resolution.row_tasks}
    return [
        rt
        for rt in run.snapshot.row_tasks
        if (rt.variant_id, rt.task_id) not in resolved and f"{rt.variant_id}/{rt.task_id}" in present
    ]


def load_run(folder: Path) -> OpenRun:
    """A run folder's plan and snapshot (a run context keeps what its process read: ``RunContext.run_folder``)."""
    plan = read_record(folder / PLAN_FILE, RunPlan)
    try:
        snapshot = safe_unpickle.loads((folder / SNAPSHOT_FILE).read_bytes())
        if not isinstance(snapshot, Snapshot):
            raise TypeError(f"it holds a {type(snapshot).__name__}")
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError) as exc:
        why = f"not a snapshot this coder-eval wrote ({type(exc).__name__}: {exc}); the run cannot be resumed"
        raise InvalidInput([Problem(str(folder / SNAPSHOT_FILE), None, DOCUMENT, why)]) from None
    return OpenRun(folder, plan, _read_where_started(snapshot, plan))


def _read_where_started(snapshot: Snapshot, plan: RunPlan) -> Snapshot:
    """The row-tasks' relative task files (and what they name: a trajectory, a template folder) read from the folder
    the run was started in: a resume or retry started elsewhere read them from the current one, and failed."""
    started_in = _started_in(plan).absolute()
    if started_in != Path.cwd():
        snapshot.row_tasks = [replace(rt, read_from=started_in) for rt in snapshot.row_tasks]
    return snapshot


def open_once(folder: Path, create: Callable[[], OpenRun]) -> OpenRun:
    """The run folder's plan and snapshot, created by whichever of concurrent runs comes first.

    The chunk runs of one backfill or tick start at the same moment (in other
    containers, on the shared volume) and share one folder: a lock file makes
    creating it happen once, so every chunk evaluates the same snapshot.
    """
    if is_run_folder(folder):
        return load_run(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with exclusively(folder / OPEN_LOCK_FILE):
        return load_run(folder) if is_run_folder(folder) else create()


def new_run_dir(runs_dir: Path, now: datetime | None = None) -> Path:
    """``<runs-dir>/<UTC timestamp>``, with ``-2``, ``-3``... on a collision, with a folder or with a removed run the
    tables still hold."""
    stamp = (now or datetime.now(UTC)).strftime(TIMESTAMP)
    runs_dir.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 10_000):
        candidate = runs_dir / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        if run_table_files(runs_dir, candidate.name):
            continue
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise RuntimeError(f"cannot create a run folder under {runs_dir}")


def started(plan: RunPlan) -> datetime:
    """The tables' ``run_ts``: when the run started, to the millisecond (its folder's name says the second only,
    and two runs started in one second must not tie in "the latest run" of a query)."""
    return datetime.fromisoformat(plan.started_at.replace("Z", "+00:00"))


def plan_evaluations(
    row_tasks: Iterable[RowTask], run: OpenRun, cache: Path | None, context: RunContext
) -> list[Evaluation]:
    return [
        new_evaluation(run.plan.run_id, run.folder, row_task, replicate, cache, context)
        for row_task in row_tasks
        for replicate in run.replicates(row_task)
    ]


STOPPED_THREADS_S = 5.0  # how long an interrupted step waits for its evaluations' threads


def in_parallel(function: Callable[[T], T], items: list[T], workers: int, interrupt: Interrupt) -> list[T]:
    """Apply ``function`` to every item with up to ``workers`` threads, keeping order; an interruption
    (Ctrl-C, a terminated step) raises the run's ``interrupt``, which stops their commands at once."""
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(items))), thread_name_prefix="coder-eval")
    futures: list[Future[T]] = []
    try:
        futures = [pool.submit(function, item) for item in items]
        # One wake-up for the batch (or its first failure), not one per item: waking for each result
        # cost this thread ~30 ms of CPU per 1,000 items, taken from the workers' GIL.
        wait(futures, return_when=FIRST_EXCEPTION)
        return [future.result() for future in futures]
    except Exception:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException:  # interrupted (Ctrl-C, a terminated run): stop the commands now
        pool.shutdown(wait=False, cancel_futures=True)  # first: a second Ctrl-C in what follows starts no more
        interrupt.raise_now()
        # Their commands stopped, the threads end; one computing on in Python (a check) is left behind: the
        # process ends without it (program.exit_now). (Not the cancelled ones: wait never counts them done.)
        wait([future for future in futures if not future.cancelled()], timeout=STOPPED_THREADS_S)
        raise
    finally:
        pool.shutdown(wait=not interrupt.is_set())


PRELOAD_AFTER_S = 0.3


def preload_tables() -> None:
    """Load the Parquet writer (pyarrow and numpy, ~0.12 s) in the background while evaluations run.

    The run writes its tables only at its end; importing there would add to
    every run's wall time what otherwise overlaps with waiting on commands.
    It starts ``PRELOAD_AFTER_S`` into the step, once the first evaluations
    have started their commands: the import holds the interpreter's lock, and
    at the step's start it delayed them (~40 ms for 8 at once).
    """
    timer = threading.Timer(PRELOAD_AFTER_S, importlib.import_module, args=(f"{__package__}.tables",))
    timer.name, timer.daemon = "coder-eval-preload", True
    timer.start()


def collect_results(run_dir: Path, written: Written = lambda _: None) -> list[EvaluationResult]:
    """Every task.json of the run; those ``written`` knows (this process wrote them) are not read back."""
    return list(run_results(run_dir, written).values())


def in_plan_order(results: list[EvaluationResult], row_tasks: list[RowTask]) -> list[EvaluationResult]:
    """The results as the run planned them (a dataset's rows in file order, each row's replicates together), as
    coder_eval lists a suite's rows: its first row labels a criterion's aggregate, not the first id in sort order."""
    order = {(row_task.variant_id, row_task.task_id): index for index, row_task in enumerate(row_tasks)}
    return sorted(results, key=lambda r: (order.get((r.variant_id, r.task_id), len(order)), r.task_id, r.replicate))


@dataclass
class Summary:
    """What summarizing a run found: its run.json, its evaluations and its suite metrics."""

    report: RunSummary
    results: list[EvaluationResult]
    suite: list[SuiteEntry]

    @property
    def passed(self) -> bool:
        return self.report.passed


def write_run_reports(run: OpenRun, summary: Summary) -> None:
    """The report files (the run viewer among them) and run.json, last."""
    from .reports.files import write_reports

    write_reports(run.folder, summary.report, summary.results, summary.suite, run.plan.experiment_description)


def end_of_run(run_dir: Path, results: list[EvaluationResult]) -> str:
    """Now, unless the run's run.json ended after every evaluation did: a resume that ran nothing new (or any
    summary written again) keeps the run's end, and so its duration."""
    now = utc_now()
    try:
        ended = read_json(run_dir / RUN_FILE).get("end_time") if (run_dir / RUN_FILE).is_file() else None
        last = max((instant(result.ended_at) for result in results), default=None)
        return ended if isinstance(ended, str) and last is not None and last <= instant(ended) else now
    except (InvalidInput, AttributeError, ValueError):  # a run.json damaged or not ours: the summary is new
        return now


def run_summary(
    run: OpenRun, max_parallel: int, end_time: str | None = None, written: Written = lambda _: None
) -> Summary:
    """Suite metrics and the comparison page, from the run's task.json files; no report file yet.

    Only a run of several variants pays for the comparison's imports
    (pandas, scipy, matplotlib).
    """
    from .reports.files import environment_info
    from .version import framework_version

    run_dir, plan = run.folder, run.plan
    results = in_plan_order(collect_results(run_dir, written), run.snapshot.row_tasks)
    suite = suite_entries(run.snapshot.row_tasks, results)
    variants = list(dict.fromkeys(rt.variant_id for rt in run.snapshot.row_tasks))
    if plan.launched:  # a backfill or a tick selects keys of its snapshot: a variant it never ran is not in it
        ran = {result.variant_id for result in results}
        variants = [variant for variant in variants if variant in ran]
    skipped = [SkippedTask.of(entry) for entry in run.snapshot.skipped]
    statistics = run_statistics(run, results)
    budget = RunBudget(run.folder, run.max_usd)  # the ledger as every process of the run left it
    skipped_evaluations = not_run(run, results, budget)
    comparison = None
    if len(variants) >= 2:
        from .compare.comparison_files import write_run_comparison

        comparison = write_run_comparison(run_dir, results, variants)
    report = RunSummary(
        run_id=plan.run_id,
        start_time=plan.started_at,
        end_time=end_time or end_of_run(run_dir, results),
        skipped_tasks=valid_utf8(  # a file name that is not UTF-8 (x\xfe.yaml) as its bytes' escapes
            [
                ReportedSkip(path=entry.path, reason=entry.reason, task_id=getattr(entry, "task_id", None))
                for entry in skipped  # (an entry of a snapshot pickled before it had task_id: the class's default)
            ]
        ),
        max_parallel=max_parallel,
        task_results=[TaskRow.of(r) for r in sorted(results, key=lambda r: (r.variant_id, r.task_id, r.replicate))],
        framework_version=framework_version(),
        environment_info=environment_info(),
        experiment=plan.experiment,
        dagster_run_id=plan.dagster_run_id,
        options=plan.spec.model_dump(mode="json"),
        variants=variants,
        # an invalid task file left out of a folder run fails it: nothing passes silently
        passed=run_passed(results, suite)
        and not any(entry.invalid for entry in skipped)
        and statistics["flaky"]["passed"]
        and not any(entry["reason"] == NOT_RUN_BUDGET for entry in skipped_evaluations),
        suite=[entry | {"partial": True} for entry in suite_json(suite)] if skipped_evaluations else suite_json(suite),
        comparison=comparison,
        not_run=skipped_evaluations,
        not_run_count=len(skipped_evaluations),
        budget={"max_usd": budget.max_usd, "spent_usd": round(budget.spent(), 6), "exhausted": budget.exhausted()}
        if budget.max_usd is not None
        else None,
        **statistics,
    )
    return Summary(report, results, suite)


NOT_RUN_SEQUENTIAL = "sequential"


def not_run(run: OpenRun, results: list[EvaluationResult], budget: RunBudget) -> list[dict[str, Any]]:
    """Planned evaluations that never started: the run's budget was spent, or a sequential A/B had decided."""
    done = {(r.variant_id, r.task_id, r.replicate) for r in results}
    entries = []
    for row_task in run.snapshot.row_tasks:
        for replicate in run.replicates(row_task):
            if (row_task.variant_id, row_task.task_id, replicate) in done:
                continue
            key = evaluation_key(row_task.variant_id, row_task.task_id, replicate)
            reason = NOT_RUN_BUDGET if budget.skipped(key) else NOT_RUN_SEQUENTIAL if run.snapshot.sequential else None
            if reason is not None:
                entries.append(
                    {"task_id": row_task.task_id, "variant_id": row_task.variant_id, "replicate": replicate}
                    | {"reason": reason}
                )
    return entries


def run_statistics(run: OpenRun, results: list[EvaluationResult]) -> dict[str, Any]:
    """run.json's repeated-trials figures (pass@k, pass^k, flaky rows and their share against the experiment's
    gate) and its sequential A/B."""
    from .compare.run_statistics import flaky_share, replicate_summary
    from .sequential_run import sequential_json

    share = flaky_share(results)
    gate = run.snapshot.max_flaky_share
    flaky = {"share": share, "max_share": gate, "passed": gate is None or share is None or share <= gate}
    return replicate_summary(results) | {"flaky": flaky, "sequential": sequential_json(run, results)}


def summarize(
    run: OpenRun,
    tables_dir: Path,
    max_parallel: int = 1,
    rescored: bool = False,
    written: Written = lambda _: None,
    end_time: str | None = None,
) -> Summary:
    """The run's Parquet files, then its report files and run.json, then the runs index. A rescore keeps the
    run's end time (its own time is each evaluation's ``rescored_at``): the run took as long as it did.

    The tables go first: when they cannot be written the run did not complete
    (exit code 1), and no run.json may say it passed.
    """
    from .compare.index import write_index
    from .tables import suite_rows, task_rows, write_tables  # pyarrow: see preload_tables

    refuse_without_result(run.folder)
    earlier = run.folder / RUN_FILE
    if rescored and earlier.is_file():
        end_time = load_summary(run.folder).end_time
    summary = run_summary(run, max_parallel, end_time, written)
    run_id = run.plan.run_id
    run_ts = started(run.plan)
    tables = task_rows(summary.results, run_ts) | {"suite_metrics": suite_rows(run_id, run_ts, summary.suite)}
    write_tables(tables_dir, run_id, run_ts, tables, summary.report.variants)
    write_run_reports(run, summary)
    try:
        write_index(run.folder.parent, (run.folder, summary.report))
    except OSError as exc:  # the page of every run, not this run's result: its verdict in run.json stands
        log.warning("the runs index was not refreshed: %s", exc)
    return summary


def refuse_without_result(run_dir: Path) -> None:
    """The run did not complete while an evaluation that ran has no task.json (its checkpoint is there: the
    scoring could not write its result, a full disk, a folder in the way): a summary without it would drop it from
    run.json and the tables, and could pass the run. ``--resume`` scores it again."""
    missing = [
        path.parent.relative_to(run_dir).as_posix()
        for path in evaluation_files(run_dir, CHECKPOINT_FILE)
        if not (path.parent / RESULT_FILE).is_file()
    ]
    if missing:
        raise OSError(f"{', '.join(missing)} has no {RESULT_FILE}: finish it with: coder-eval run --resume {run_dir}")
