"""`coder-eval run` and `coder-eval rescore`: the CLI skin over the Dagster launch."""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import exit_codes
from .core.credentials import Credentials
from .core.layout import (
    CHECKPOINT_FILE,
    PLAN_FILE,
    PREVIOUS_RESULT_FILE,
    REPORT_FILE,
    RESCORING_FILE,
    RESULT_FILE,
    RUN_FILE,
    RUN_VIEWER,
    SNAPSHOT_FILE,
    evaluation_files,
    evaluation_folder,
    is_run_folder,
    load_result,
    load_summary,
    read_json,
    replicate_name,
)
from .core.models.report import RunSummary, Spend, TaskRow
from .core.models.results import EvaluationResult
from .core.problems import InvalidInput
from .core.reports.junit import write_junit
from .core.reports.notes import budget_left_out, evaluations, flaky_figures, spent_of_budget, threshold_figures
from .core.reports.run_summary import agent_usd, counts_line, gated, judges_usd, total_usd, usd, why_not_passed
from .core.reports.shown_text import one_line, skipped_file
from .core.resolution import Resolution, RowTask, resolve, selection_counts
from .core.routing import resolve_route, routing_line
from .core.run_context import NOT_RUN_STATUS, RunContext, missing_model_key, uses_model_route
from .core.run_lock import working_on
from .core.run_spec import RunOptions, RunSpec
from .core.runs import (
    OpenRun,
    evaluated,
    gone_paths,
    keep_snapshot,
    load_run,
    new_run_dir,
    open_run,
    resnapshot,
    without_sandbox,
)
from .core.sandbox.tempdir import prewarm_namespaces
from .core.sequential_run import batch_results, in_batches, may_start

MAX_TABLE_ROWS = 40
LOG_WIDTH = 400  # columns of a CI log's lines: wide enough for a 100-character id in each id column


def run_context(options: RunOptions) -> RunContext:
    """The run's context, made before anything is written: an unusable route (API_BACKEND=vertex) stops here."""
    return RunContext.create(options.backend, options.judge_concurrency)


def run(spec: RunSpec, options: RunOptions, junit: Path | None = None, folder: Path | None = None) -> int:
    """A new run, in ``folder`` (made) or a new folder of ``options.runs_dir``."""
    context = run_context(options)
    resolution = selected(spec)
    if resolution is None:
        return exit_codes.USAGE
    missing = missing_model_key(resolution.row_tasks, context)
    if missing:
        print(f"coder-eval run: {missing}", file=sys.stderr)
        return exit_codes.USAGE
    _prewarm(resolution.row_tasks, options)
    instance = _open_instance()
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)  # (empty: _named_run checked)
    else:
        folder = new_run_dir(Path(options.runs_dir))
    with working_on(folder):
        opened = open_run(folder, spec, str(uuid.uuid4()), resolution)
        warn_over_budget(resolution, opened.max_usd, options, context)
        return _launch(instance, opened, opened.snapshot.row_tasks, options, context, junit=junit)


def warn_over_budget(resolution: Resolution, max_usd: float | None, options: RunOptions, context: RunContext) -> None:
    """One line before anything starts when the run's forecast exceeds its budget: the user learns now that the
    run will be cut short, not after it spent the budget (the run goes on: the budget itself stops it)."""
    if max_usd is None:
        return
    from .core.forecast import budget_warning, forecast

    result = forecast(resolution, Path(options.runs_dir), options.workers, backend=context.route.backend)
    line = budget_warning(result, max_usd)
    if line:
        print(line, file=sys.stderr)


def selected(spec: RunSpec) -> Resolution | None:
    """The spec resolved, its warnings and skipped files said; None (and why) when it selects no row-task.
    Invalid input raises (exit 2)."""
    resolution = resolve(spec)
    resolution.skip_invalid_folder_files()
    sys.stderr.write("".join(f"{warning}\n" for warning in resolution.warnings))
    if resolution.problems:
        raise InvalidInput(resolution.problems)
    print_skipped(resolution)
    if not resolution.row_tasks:
        print(nothing_selected("run", resolution), file=sys.stderr)
        return None
    return resolution


def estimate(spec: RunSpec, options: RunOptions) -> int:
    """``run --estimate``: the selection's forecast on stdout; nothing is run, nothing written, no key needed."""
    from .core.forecast import forecast
    from .core.forecast.render import render_json, render_table

    backend = resolve_route(options.backend, Credentials.of_process(), os.environ).backend  # models as it names them
    resolution = selected(spec)
    if resolution is None:
        return exit_codes.USAGE
    result = forecast(resolution, Path(options.runs_dir), options.workers, backend=backend)
    sys.stdout.write(render_json(result) if options.estimate_format == "json" else render_table(result))
    return exit_codes.OK


def nothing_selected(command: str, resolution: Resolution) -> str:
    """The line a command says when its selection holds no row-task: what was left out, and why."""
    reasons = [f"{count} {why}" for why, count in resolution.filtered.items()]
    if resolution.skipped:
        reasons.append(f"{len(resolution.skipped)} skipped (above)")
    left_out = f" (left out: {'; '.join(reasons)})" if reasons else " (the paths hold no task files)"
    return f"coder-eval {command}: no row-tasks selected{left_out}"


def print_skipped(resolution: Resolution) -> None:
    """One line per task file left out (skip: true, invalid in a folder), with its reason."""
    for entry in resolution.skipped:
        print(f"skipped {skipped_file(entry.path, entry.reason)}", file=sys.stderr)


def _run_folder(command: str, run_dir: Path) -> OpenRun | None:
    """The run folder named; through a link (``runs/latest``), the folder it points to: its name is the run's id
    in the reports, and a later process must find it again."""
    if not is_run_folder(run_dir):
        lacking = next(name for name in (PLAN_FILE, SNAPSHOT_FILE) if not (run_dir / name).is_file())
        hint = ""
        if lacking == PLAN_FILE and (run_dir / RUN_FILE).is_file():  # a report without our plan: coder_eval's
            hint = (
                "; a run coder_eval wrote? it is read by report and compare, and an evaluation's kept "
                "sandbox (its task.json's sandbox_path) is graded again with: coder-eval evaluate TASK SANDBOX"
            )
        print(f"coder-eval {command}: {run_dir} is not a run folder (no {lacking}){hint}", file=sys.stderr)
        return None
    return load_run(run_dir.resolve() if run_dir.is_symlink() else run_dir)


def unfinished(opened: OpenRun) -> list[Path]:
    """Evaluation folders of the run's snapshot without a final task.json; of a launched run's (a backfill, a
    tick), only those its runs started: the rest of its snapshot's row-tasks were never selected."""
    never = recorded_not_run(opened.folder)
    folders = (
        evaluation_folder(opened.folder, rt.variant_id, rt.task_id, replicate)
        for rt in opened.snapshot.row_tasks
        for replicate in opened.replicates(rt)
        if (rt.variant_id, rt.task_id, replicate) not in never
    )
    return [f for f in folders if not (f / RESULT_FILE).is_file() and (f.is_dir() or not opened.plan.launched)]


def unfinished_problem(run_dir: Path) -> str | None:
    """Why the run in ``run_dir`` cannot be read as a result: evaluations it planned never finished, or a rescore
    of it was cut short (None: every one did, or the folder is not a run of ours)."""
    if not is_run_folder(run_dir):
        return None
    cut_short = rescore_cut_short(run_dir)
    if cut_short:
        return cut_short
    run = load_run(run_dir)
    missing = unfinished(run)
    return incomplete(run, missing) if missing else None


def rescore_cut_short(run_dir: Path) -> str | None:
    """Why a run whose rescore never finished (Ctrl-C, a kill) is refused where its results are read together:
    some of its task.json files hold the new scoring, the others the old one."""
    if not (run_dir / RESCORING_FILE).exists():
        return None
    return (
        f"{run_dir} was being rescored and the rescore did not finish: its evaluations mix the two scorings; "
        f"finish it with: coder-eval rescore {run_dir}"
    )


def _rescored_whole(run_dir: Path, started: int) -> bool:
    """Whether the rescore that began at ``started`` (ns) wrote the run's summary: every evaluation scored again."""
    try:
        return (run_dir / RUN_FILE).stat().st_mtime_ns >= started
    except OSError:
        return False


def _rescored_any(run_dir: Path, started: int) -> bool:
    """Whether a rescore that began at ``started`` (ns) wrote any evaluation's task.json."""
    return any(path.stat().st_mtime_ns >= started for path in evaluation_files(run_dir, RESULT_FILE))


def recorded_not_run(run_dir: Path) -> set[tuple[str, str, int]]:
    """The evaluations run.json says never started on purpose (the budget spent, a sequential A/B decided): not
    unfinished, nothing to resume."""
    try:  # bounded: a run.json that is a link to /dev/zero or a FIFO is no record (layout.read_json)
        recorded = read_json(run_dir / RUN_FILE).get("not_run") or []
        return {(entry["variant_id"], entry["task_id"], int(entry["replicate"])) for entry in recorded}
    except (OSError, InvalidInput, ValueError, AttributeError, KeyError, TypeError):
        return set()


def incomplete(opened: OpenRun, missing: list[Path]) -> str:
    """Why a run that never finished (killed, interrupted, a retry cut short) is refused where a command needs its
    every evaluation (rescore, --retry-errors, report --rebuild), and how to finish it: a Dagster launch's folder
    (a backfill, a tick) is finished in Dagster, which --resume refuses."""
    why = f"{len(missing)} evaluation(s) never finished" if missing else "its run.json and table rows were not written"
    said = f"{opened.folder} is incomplete ({why}); finish it first"
    if opened.plan.launched:
        from .defs.names import RUN_FOLDER_TAG  # (Dagster: imported only to say this)

        return (
            f"{said} in Dagster: re-execute its failed runs from the UI, then materialize suite_metrics with the tag "
            f"{RUN_FOLDER_TAG}={opened.folder.name}"
        )
    return f"{said} with: coder-eval run --resume {opened.folder}"


def resume(run_dir: Path, options: RunOptions, retry_errors: bool, junit: Path | None = None) -> int:
    """Finish a run whose process died (or re-run its ERROR evaluations) in its own folder; refused while the
    run's process is still going (its work lock).

    Evaluations that finished a phase keep it (an agent never runs twice);
    those cut short are redone whole; the summary and tables are rewritten.
    """
    context = run_context(options)
    opened = _run_folder("run", run_dir)
    if opened is None:
        return exit_codes.USAGE
    if opened.plan.launched and not retry_errors:
        print(
            f"coder-eval run: {run_dir} is a Dagster launch's folder (a backfill, a schedule or sensor tick), whose "
            "runs evaluate the partitions they were given and share the folder without its lock: re-execute its "
            "failed runs from the Dagster UI; --resume finishes a run the CLI started",
            file=sys.stderr,
        )
        return exit_codes.USAGE
    with working_on(run_dir):
        return _resume(opened, options, context, retry_errors, junit)


def _resume(opened: OpenRun, options: RunOptions, context: RunContext, retry_errors: bool, junit: Path | None) -> int:
    run_dir = opened.folder
    row_tasks = opened.snapshot.row_tasks
    cut_short = rescore_cut_short(run_dir)
    if cut_short and not unfinished(opened):  # (one whose task.json is gone is finished first, then rescored)
        print(f"coder-eval run: {cut_short}", file=sys.stderr)
        return exit_codes.USAGE
    if retry_errors:
        missing = unfinished(opened)
        if missing or not (run_dir / RUN_FILE).is_file():  # its ERROR results may be set aside by a retry cut short
            print(f"coder-eval run: {incomplete(opened, missing)}", file=sys.stderr)
            return exit_codes.USAGE
        errored = _reset_errored(run_dir)
        if not errored:
            print(f"coder-eval run: no ERROR evaluation in {run_dir}", file=sys.stderr)
            return _report(run_dir, junit)
        row_tasks = _row_tasks_of(opened, errored)
        _say_files_changed(opened, row_tasks)
    else:
        _reset_deleted_results(run_dir)
        _say_files_changed(opened, _reading_files_again(opened, unfinished(opened)))
    _prewarm(row_tasks, options)
    return _launch(_open_instance(), opened, row_tasks, options, context, fresh_id=True, junit=junit)


def _reading_files_again(opened: OpenRun, folders: list[Path]) -> list[RowTask]:
    """The row-tasks of these unfinished evaluations that read the files of their fingerprint again: one whose
    sandbox and agent run again (no checkpoint kept), or one only scored again whose scoring reads files (its
    reference, ``$TASK_DIR``); one scored again that reads none reads no template, plugin or trajectory again."""
    from .core.reference import reads_task_dir

    rebuilt = _row_tasks_of(opened, [folder for folder in folders if not (folder / CHECKPOINT_FILE).is_file()])
    again = {(rt.variant_id, rt.task_id) for rt in rebuilt}
    return [
        rt
        for rt in _row_tasks_of(opened, folders)
        if (rt.variant_id, rt.task_id) in again or rt.task.reference is not None or reads_task_dir(rt.task)
    ]


def _row_tasks_of(opened: OpenRun, folders: list[Path]) -> list[RowTask]:
    """The row-tasks of these evaluation folders (``<variant>/<task_id>/<NN>``)."""
    named = {folder.parent.relative_to(opened.folder).as_posix() for folder in folders}
    return [rt for rt in opened.snapshot.row_tasks if f"{rt.variant_id}/{rt.task_id}" in named]


def _say_files_changed(opened: OpenRun, row_tasks: list[RowTask]) -> None:
    """A note when files the row-tasks about to run read changed since the run started: the snapshot keeps the
    task files as they were, not the files they read (fingerprints.py), which run as they are now (a resumed run
    mixes the two versions, so it is said)."""
    from .core.fingerprints import fingerprints

    recorded = opened.snapshot.fingerprints
    changed = [key for key, digest in fingerprints(row_tasks).items() if recorded.get(key) not in (None, digest)]
    if changed:
        named = ", ".join(f"{task_id} [{variant_id}]" for task_id, variant_id in changed[:5])
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        print(
            f"coder-eval run: note: {len(changed)} row-task(s) to run read files that changed since the run started "
            f"(a template folder or repository, the reference, a $TASK_DIR file, a judge's rubric, a plugin or a "
            f"replay trajectory, which the run's snapshot does not keep): they run with them as they are now: "
            f"{named}{more}",
            file=sys.stderr,
        )


def _reset_errored(run_dir: Path) -> list[Path]:
    """The ERROR evaluations' folders, their results out of the way so that they run again: the checkpoint removed,
    task.json set aside as task.previous.json, whose judge verdicts the new scoring may reuse."""
    folders = []
    for path in evaluation_files(run_dir, RESULT_FILE):
        if load_result(path).final_status == "ERROR":
            path.replace(path.parent / PREVIOUS_RESULT_FILE)
            (path.parent / CHECKPOINT_FILE).unlink(missing_ok=True)
            folders.append(path.parent)
    return folders


def _reset_deleted_results(run_dir: Path) -> None:
    """Evaluations that finished (their task.html is there) and whose task.json the user deleted, to run again from
    the start, as coder_eval's docs say ("delete a task's task.json to force a re-run"): their checkpoint would
    otherwise keep the sandbox and the agent's work and only score it again. One cut short while scoring has
    neither file, and resumes from its checkpoint."""
    for path in evaluation_files(run_dir, REPORT_FILE):
        if not (path.parent / RESULT_FILE).exists():
            (path.parent / CHECKPOINT_FILE).unlink(missing_ok=True)
            path.unlink()


def rescore(run_dir: Path, options: RunOptions, junit: Path | None = None) -> int:
    """Score a finished run's evaluations again with the criteria as the task files say now; refused while another
    process works on the run (its work lock)."""
    context = run_context(options)
    opened = _run_folder("rescore", run_dir)
    if opened is None:
        return exit_codes.USAGE
    with working_on(run_dir):
        return _rescore(opened, options, context, junit)


def _first_few(names: list[str]) -> str:
    """The first five, and `` ...`` when there are more: a one-line message naming what it is about."""
    return ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")


def _warn_post_run(row_tasks: list[RowTask]) -> None:
    """A task's post_run ran after its criteria, on the sandbox they graded: a rescore grades what post_run left
    (a cleanup's `rm -rf` included), so its verdict may differ where the run's did not."""
    tasks = list(dict.fromkeys(rt.base_task_id for rt in row_tasks if rt.task.post_run))
    if tasks:
        shown = _first_few(tasks)
        print(
            f"coder-eval rescore: warning: the post_run commands of {shown} ran after the run's criteria; the "
            "rescore grades the sandbox as post_run left it",
            file=sys.stderr,
        )


def _rescore(opened: OpenRun, options: RunOptions, context: RunContext, junit: Path | None) -> int:
    run_dir = opened.folder
    missing = unfinished(opened)
    if missing or not (run_dir / RUN_FILE).is_file():  # or stopped before its summary: --resume writes it, and tables
        print(f"coder-eval rescore: {incomplete(opened, missing)}", file=sys.stderr)
        return exit_codes.USAGE
    try:  # a damaged run.json is said before any evaluation is scored again (and its task.json rewritten)
        load_summary(run_dir)
    except InvalidInput as exc:
        more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        print(f"coder-eval rescore: {exc.problems[0]}{more}", file=sys.stderr)
        return exit_codes.USAGE
    present = evaluated(run_dir)
    resolution, kept, now_invalid = resnapshot(opened, present)  # the criteria as the task files say now
    if resolution.problems:
        raise InvalidInput(resolution.problems)
    gone = without_sandbox(run_dir, present)
    if gone:
        shown = _first_few([str(folder.relative_to(run_dir)) for folder in gone])
        print(
            f"coder-eval rescore: {len(gone)} evaluation(s) of {run_dir} have no preserved sandbox to grade "
            f"(removed or linked elsewhere since the run): {shown}; nothing was scored again",
            file=sys.stderr,
        )
        return exit_codes.USAGE
    for entry in now_invalid:  # why a file's evaluations are "no longer in the task files" (below)
        print(f"coder-eval rescore: left out now: {skipped_file(entry.path, entry.reason)}", file=sys.stderr)
    if kept:
        shown = _first_few([f"{rt.variant_id}/{rt.task_id}" for rt in kept])
        print(
            f"coder-eval rescore: {len(kept)} evaluated row-task(s) no longer in the task files, scored with the "
            f"criteria the run had: {shown}{gone_paths(opened)}",
            file=sys.stderr,
        )
    row_tasks = resolution.row_tasks  # the evaluated ones only
    if not row_tasks:
        print(f"coder-eval rescore: {run_dir} has no evaluation to rescore", file=sys.stderr)
        return exit_codes.USAGE
    keep_snapshot(opened, resolution, present)
    _warn_post_run(row_tasks)
    _prewarm(row_tasks, options)
    marker = run_dir / RESCORING_FILE
    marker.write_text("", encoding="utf-8")
    started = marker.stat().st_mtime_ns
    code = _launch(_open_instance(), opened, row_tasks, options, context, rescore=True, junit=junit)
    whole = code != exit_codes.INTERRUPTED and _rescored_whole(run_dir, started)
    if whole or not _rescored_any(run_dir, started):  # done, or refused before any evaluation was scored again
        marker.unlink(missing_ok=True)
    return code


def register(spec: RunSpec) -> int:
    """Add the selection's row-tasks and variants as partitions and record them as resolved; run nothing."""
    resolution = resolve(spec)
    if resolution.problems:
        raise InvalidInput(resolution.problems)
    if not resolution.row_tasks:  # as `run` over the same selection
        print_skipped(resolution)
        print(nothing_selected("register", resolution), file=sys.stderr)
        return exit_codes.USAGE
    from .launch import record_resolution, register_partitions

    with _open_instance() as instance:  # closed when done: SQLite folds its write-ahead log in (see _launch)
        added = register_partitions(instance, resolution.row_tasks)
        recorded = record_resolution(instance, resolution, spec)
    counts = selection_counts(resolution.row_tasks)
    print(
        f"registered {counts['row_tasks']} row-task(s) x {counts['variants']} variant(s); {added} key(s) were new; "
        f"{recorded} resolved_tasks partition(s) recorded as materialized"
    )
    return exit_codes.OK


def dev(extra: list[str]) -> int:
    """`dagster dev` on the same instance the CLI uses (its dagster.yaml, its databases), serving this code.

    The credentials this process was started with go back into the environment
    of `dagster dev`: its run workers take their run context from there (see
    docs/running.md, "How credentials travel").
    """
    import os
    import shutil

    from .launch import EVENT_BATCH_SIZE, local_home

    dagster = shutil.which("dagster") or str(Path(sys.executable).parent / "dagster")
    if "--help" in extra:  # help only: no instance made for it (dagster dev's -h is its --host)
        os.execv(dagster, [dagster, "dev", "--help"])  # no return
    home = local_home()
    _open_instance().dispose()  # writes coder-eval's dagster.yaml there when the folder has none
    print(f"coder-eval dev: DAGSTER_HOME={home}", file=sys.stderr)
    environment = {**os.environ, **Credentials.of_process().by_name, "DAGSTER_HOME": str(home)}
    environment.setdefault("DAGSTER_EVENT_BATCH_SIZE", EVENT_BATCH_SIZE)  # its run workers store events as the CLI's
    os.execvpe(dagster, [dagster, "dev", "-m", "coder_eval_dagster.definitions", *extra], environment)  # no return


def _prewarm(row_tasks: list[RowTask], options: RunOptions) -> None:
    """The first evaluations' process namespaces, started while Dagster is imported (next)."""
    prewarm_namespaces((rt.task.sandbox for rt in row_tasks for _ in range(rt.replicates)), options.workers)


def _open_instance() -> Any:
    """Import Dagster and open the instance before the run's clock starts."""
    from .launch import local_instance
    from .startup import imports_done

    instance = local_instance()
    imports_done()
    return instance


def _launch(
    instance: Any,
    opened: OpenRun,
    row_tasks: list[RowTask],
    options: RunOptions,
    context: RunContext,
    rescore: bool = False,
    fresh_id: bool = False,
    junit: Path | None = None,
) -> int:
    from .core.sandbox.container import remove_own_containers
    from .defs.resources import CoderEvalSettings, RunOptionsConfig, RunSpecConfig
    from .launch import execute, failure_messages, interrupted, refused_inputs

    run_dir = opened.folder
    settings = CoderEvalSettings(
        spec=RunSpecConfig(**opened.plan.spec.model_dump()),
        options=RunOptionsConfig(**options.model_dump()),
        run_dir=str(run_dir),
        rescore=rescore,
    )
    if uses_model_route(row_tasks):  # a run that calls no model has no route to show
        print(routing_line(context.route), file=sys.stderr)
    bar = StageProgress(sum(rt.replicates for rt in row_tasks), rescore)
    context = replace(context, progress=bar)
    # a sequential A/B runs one Dagster run per batch, and starts the next only while the sequence is undecided
    batches = [row_tasks] if rescore else in_batches(opened, row_tasks)
    results: list[EvaluationResult] = [] if len(batches) == 1 else batch_results(opened, opened.snapshot.row_tasks)
    failures: list[str] = []
    refused: list[str] = []
    with bar:
        try:
            for batch in batches:
                if len(batches) > 1 and not may_start(opened, results, batch[0].batch or 0):
                    break
                first = batch is batches[0] and not (rescore or fresh_id)
                dagster_run_id = (opened.plan.dagster_run_id if first else None) or str(uuid.uuid4())
                task_ids = list(dict.fromkeys(rt.task_id for rt in batch))
                variant_ids = list(dict.fromkeys(rt.variant_id for rt in batch))
                result = execute(instance, settings, context, task_ids, variant_ids, dagster_run_id, rescore)
                failures, refused = failure_messages(result), refused_inputs(result)
                if interrupted(result):
                    context.interrupt.raise_now()
                if failures or context.interrupt.is_set():
                    break
                if len(batches) > 1:  # the batch's results replace what a resumed run had read of it
                    ran = {rt.task_id for rt in batch}
                    results = [r for r in results if r.task_id not in ran] + batch_results(opened, batch)
        finally:
            remove_own_containers()  # this run is this process: none of its sandboxes outlives it, a crash neither
            context.close()  # telemetry: what the run buffered goes out before the summary is printed
            # Its database connections closed: on SQLite the last one out folds the write-ahead log into the
            # database and removes it (the process ends without closing anything, program.exit_now).
            instance.dispose()
    if context.interrupt.is_set():
        print(
            f"coder-eval: interrupted; what finished is in {run_dir}; go on with: coder-eval run --resume {run_dir}",
            file=sys.stderr,
        )
        return exit_codes.INTERRUPTED
    if refused:  # a file of the run that a step found damaged: the input is wrong, not the run
        others = [failure for failure in failures if not any(line in failure for line in refused)]
        print(*refused, *(f"coder-eval: also: {failure}" for failure in others), sep="\n", file=sys.stderr)
        return exit_codes.USAGE
    if failures or not (run_dir / RUN_FILE).is_file():
        print("coder-eval: the run did not complete:", *failures, sep="\n  ", file=sys.stderr)
        return exit_codes.FAILED
    return _report(run_dir, junit)


def _report(run_dir: Path, junit: Path | None = None) -> int:
    """The run's summary on the terminal (and its JUnit file); the exit code of its verdict."""
    report = load_summary(run_dir)
    if junit is not None:
        write_junit(report, junit)
    print_summary(report, run_dir)
    return exit_codes.OK if report.passed else exit_codes.FAILED


def across_variants(rows: list[TaskRow], most: int) -> list[TaskRow]:
    """At most ``most`` of ``rows``, taken from each variant in turn (an A/B's terminal shows both arms), each
    variant's in the run's order."""
    by_variant: dict[str, list[TaskRow]] = {}
    for row in rows:
        by_variant.setdefault(row.variant_id, []).append(row)
    taken = [row for turn in itertools.zip_longest(*by_variant.values()) for row in turn if row is not None][:most]
    kept = {id(row) for row in taken}
    return [row for row in rows if id(row) in kept]


def terminal(stderr: bool = False) -> Any:
    """Rich's console, as wide as the terminal; in a CI log (no terminal, no COLUMNS) no line is wrapped at rich's
    80 columns, where a suite gate's verdict went to a line of its own and a grep for it found nothing."""
    from rich.console import Console

    console = Console(stderr=stderr)
    stream = sys.stderr if stderr else sys.stdout
    if not stream.isatty() and "COLUMNS" not in os.environ:  # not console.is_terminal: FORCE_COLOR sets that
        console.width = LOG_WIDTH
    return console


def print_summary(report: RunSummary, run_dir: Path) -> None:
    """A table of the evaluations (those that did not pass, when there are many), why each failed, the suite
    thresholds and the verdict."""
    from rich.markup import escape
    from rich.table import Table

    console = terminal()
    rows = report.task_results
    failed = [row for row in rows if not row.success]
    listed = across_variants(failed, MAX_TABLE_ROWS)
    shown = rows if len(rows) <= MAX_TABLE_ROWS else listed
    table = Table(title=f"run {report.run_id}" + ("" if shown is rows else " (not passed only)"))
    for column in ("variant", "task", "#", "status", "score", "criteria", "seconds"):
        table.add_column(column, justify="right" if column in ("#", "score", "seconds") else "left")
    for row in shown:
        gating = gated(row)
        style = "green" if row.success else "red"
        table.add_row(
            escape(row.variant_id),
            escape(row.task_id),
            replicate_name(row.replicate_index),
            f"[{style}]{row.status}[/]",
            "–" if row.weighted_score is None else f"{row.weighted_score:.3f}",
            f"{sum(c.passed for c in gating)}/{len(gating)}",
            f"{row.duration:.2f}",
        )
    if shown:
        console.print(table)
    for row in listed:
        where = escape(f"{row.task_id} [{row.variant_id}] #{replicate_name(row.replicate_index)}")
        why = escape(one_line(why_not_passed(row)))
        console.print(f"[red]✗[/] {where} {row.status}: {why}", highlight=False, soft_wrap=True)
    if len(failed) > len(listed):
        more = f"… and {len(failed) - len(listed)} more that did not pass: run.md and the run viewer list them all"
        console.print(more, highlight=False, soft_wrap=True)
    for entry in report.suite:
        for threshold in entry["thresholds"]:
            mark = "[green]met[/]" if threshold["passed"] else "[red]NOT met[/]"
            criterion = f"#{entry['criterion_index']} {entry['criterion_type']}"  # which criterion's metric
            label = escape(f"suite {entry['base_task_id']} [{entry['variant_id']}] {criterion} {threshold['metric']}")
            value = " >= ".join(threshold_figures(threshold))
            console.print(f"{label} {value}: {mark}", highlight=False)
    for variant, spend in report.spend_by_variant.items():
        if spent_anything(spend):
            line = f"spend [{variant}]: agent {agent_usd(spend)}, judges {judges_usd(spend)}, "
            line += f"simulated user {usd(spend.simulator)}; total {total_usd(spend)}"
            console.print(escape(line), highlight=False, soft_wrap=True)
    print_statistics(console, report)
    verdict = "[green]PASSED[/]" if report.passed else "[red]FAILED[/]"
    skipped = f", {len(report.skipped_tasks)} skipped" if report.skipped_tasks else ""
    console.print(
        f"{verdict} {escape(counts_line(report))}{skipped} · {escape(str(run_dir))}", highlight=False, soft_wrap=True
    )
    if (run_dir / RUN_VIEWER).is_file():
        console.print(f"viewer: {escape(str(run_dir / RUN_VIEWER))}", highlight=False, soft_wrap=True)


def spent_anything(spend: Spend) -> bool:
    """Whether a variant's spend line has anything to say: tokens, a cost (known or not), or verdicts reused (paid for
    by an earlier scoring). A run whose model calls all failed at once spent nothing: no line of dashes and $0."""
    parts = [usage for usage in (spend.agent, spend.judges, spend.simulator) if usage is not None]
    said = any(usage.spent or usage.total_cost_usd or usage.cost_source == "unknown" for usage in parts)
    return said or spend.judge_verdicts_reused > 0


# Which stage completes each progress line.
PROGRESS_LINES = {"setup": "sandboxes ready", "agent": "agents done", "finish": "scored"}
LOG_EVERY_S = 5.0


def print_statistics(console: Any, report: RunSummary) -> None:
    """The run-wide budget, the flaky-rows gate and the sequential A/B's decision, when the run has them."""
    from rich.markup import escape

    budget = report.budget or {}
    if budget.get("exhausted"):
        line = f"budget spent: {spent_of_budget(budget)}; {evaluations(budget_left_out(report))} not run"
        console.print(f"[red]{escape(line)}[/]", highlight=False)
    flaky = report.flaky_gate
    if flaky is not None:
        mark = "[green]met[/]" if flaky["passed"] else "[red]NOT met[/]"
        share, most = flaky_figures(flaky)
        console.print(f"flaky rows {share} (max_flaky_share {most}): {mark}", highlight=False)
    block = report.sequential
    if block:
        low, high = block["interval"]["low"], block["interval"]["high"]
        stopped = (
            "ran to the end"
            if block["stopped_at_batch"] is None
            else f"stopped after batch {block['stopped_at_batch']}"
        )
        line = f"sequential A/B: {block['decision']} ({block['rows_run']} of {block['rows_total']} rows, {stopped}; "
        console.print(escape(line + f"difference within [{low:+.3f}, {high:+.3f}])"), highlight=False)


class StageProgress:
    """Progress per stage (sandboxes ready, agents done, scored): the run context's progress sink.

    On a terminal: live bars with a clock and an ETA. Elsewhere (CI logs): one
    line per stage at most every few seconds, one when it is settled, and a last
    one at the end for a stage that never was (a sequential A/B's stop, an
    interrupt). An evaluation the run-wide budget kept from starting counts as
    not run, never as done: ``agents done: 3/6 (4 s); 3 not run: budget spent``.
    """

    def __init__(self, total: int, rescore: bool):
        self.total = total
        self.console = terminal(stderr=True)
        self.lines = {"finish": "scored"} if rescore else dict(PROGRESS_LINES)
        self.done = dict.fromkeys(self.lines, 0)
        self.not_run = dict.fromkeys(self.lines, 0)
        self.logged = dict.fromkeys(self.lines, (0, 0))  # the counts (done, not run) each stage's last line said
        self.logged_at = dict.fromkeys(self.lines, 0.0)
        self.lock = threading.Lock()  # called from the evaluations' threads: one count, one whole line at a time
        self.progress: Any = None
        if self.console.is_terminal and sys.stderr.isatty():  # FORCE_COLOR (a CI's) makes rich take a log for one
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(
                TextColumn("{task.description:<16}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self.bars = {stage: self.progress.add_task(label, total=total) for stage, label in self.lines.items()}
        self.started = time.monotonic()

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        stage = info.get("stage")
        if event != "stage" or stage not in self.lines:
            return
        with self.lock:
            counts = self.not_run if info.get("status") == NOT_RUN_STATUS else self.done
            counts[stage] += 1
            if self.progress is not None:
                self.progress.update(self.bars[stage], completed=self.done[stage], description=self.bar_label(stage))
                return
            now = time.monotonic()
            if self.done[stage] + self.not_run[stage] == self.total or now - self.logged_at[stage] >= LOG_EVERY_S:
                self.log(stage, now)

    def not_run_said(self, stage: str) -> str:
        """``; 3 not run: budget spent``, when the budget kept some evaluations from starting."""
        left = self.not_run[stage]
        return f"; {left} not run: budget spent" if left else ""

    def bar_label(self, stage: str) -> str:
        return self.lines[stage] + self.not_run_said(stage)

    def log(self, stage: str, now: float) -> None:
        """The stage's line: ``agents done: 3/6 (4 s)``, and what was not run."""
        self.logged_at[stage], self.logged[stage] = now, (self.done[stage], self.not_run[stage])
        counted = f"{self.lines[stage]}: {self.done[stage]}/{self.total} ({now - self.started:.0f} s)"
        print(counted + self.not_run_said(stage), file=sys.stderr)

    def __enter__(self) -> StageProgress:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()
            return
        with self.lock:
            for stage in self.lines:
                if self.logged[stage] != (self.done[stage], self.not_run[stage]):
                    self.log(stage, time.monotonic())
