"""A sequential A/B inside a run: the batches in order, whether the next one need start, and run.json's record.

The plan is made once, at resolution (``RowTask.batch``, from the
experiment's ``sequential`` block and seed), so the CLI's loop, a Dagster run
and a later ``report`` all read the same batches. The statistics are in
``compare/run_statistics.py``; this module only says which results they see.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .layout import RESULT_FILE, evaluation_folder, load_result
from .models.results import EvaluationResult
from .resolution import BEYOND_MAX_ROWS, RowTask

if TYPE_CHECKING:
    from .compare.run_statistics import SequentialStatus
    from .runs import OpenRun


def in_batches(run: OpenRun, row_tasks: list[RowTask]) -> list[list[RowTask]]:
    """``row_tasks`` grouped by batch in batch order; one group when the run is not a sequential A/B."""
    if run.snapshot.sequential is None:
        return [row_tasks]
    groups: dict[int, list[RowTask]] = {}
    for row_task in row_tasks:
        groups.setdefault(row_task.batch or 0, []).append(row_task)
    return [groups[number] for number in sorted(groups)]


def batch_results(run: OpenRun, row_tasks: Iterable[RowTask]) -> list[EvaluationResult]:
    """The results written for these row tasks (a replicate not written yet is left out)."""
    found = []
    for row_task in row_tasks:
        for replicate in run.replicates(row_task):
            path = evaluation_folder(run.folder, row_task.variant_id, row_task.task_id, replicate) / RESULT_FILE
            if path.is_file():
                found.append(load_result(path))
    return found


def status_through(run: OpenRun, results: list[EvaluationResult], through_batch: int) -> SequentialStatus:
    """The sequential decision on the results of batches 1..``through_batch`` (all finished)."""
    from .compare.run_statistics import sequential_status  # numpy: only a sequential run pays for it

    settings = run.snapshot.sequential
    assert settings is not None, "only a sequential A/B has a status"
    row_tasks = run.snapshot.row_tasks
    batch_of = {rt.task_id: rt.batch for rt in row_tasks if rt.batch is not None}
    variants = list(dict.fromkeys(rt.variant_id for rt in row_tasks))
    return sequential_status(results, batch_of, variants, through_batch, settings.alpha, settings.margin)


def may_start(run: OpenRun, results: list[EvaluationResult], batch: int) -> bool:
    """Whether batch ``batch`` need start: not once the batches before it decided every comparison."""
    return batch <= 1 or not status_through(run, results, batch - 1).decisive


def finished_through(run: OpenRun, results: list[EvaluationResult]) -> int:
    """The last batch whose every planned evaluation has a result, all batches before it too (0: none)."""
    done = {(r.variant_id, r.task_id, r.replicate) for r in results}
    last = 0
    for number, group in enumerate(in_batches(run, run.snapshot.row_tasks), 1):
        planned = [(rt.variant_id, rt.task_id, rep) for rt in group for rep in run.replicates(rt)]
        if not all(key in done for key in planned):
            break
        last = number
    return last


def sequential_json(run: OpenRun, results: list[EvaluationResult]) -> dict[str, Any] | None:
    """run.json's ``sequential``: the decision on the finished batches and the rows run (those never started are
    in run.json's ``not_run``)."""
    from .compare.run_statistics import sequential_block

    if run.snapshot.sequential is None or not run.snapshot.row_tasks:
        return None
    through = finished_through(run, results)
    status = status_through(run, results, through)
    planned = list(dict.fromkeys(rt.task_id for rt in run.snapshot.row_tasks))
    started = {r.task_id for r in results}
    not_run = [task_id for task_id in planned if task_id not in started]
    beyond = run.snapshot.filtered.get(BEYOND_MAX_ROWS, 0)  # never planned: not in not_run
    rows_total = len(planned) + beyond
    stopped_at = through if not_run else None  # what ran, whatever a rescore's scores now decide
    block = sequential_block(status, len(started & set(planned)), rows_total, stopped_at)
    return block | {"batch_rows": run.snapshot.sequential.batch_rows, "rows_beyond_max_rows": beyond}
