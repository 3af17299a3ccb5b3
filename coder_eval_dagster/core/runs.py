"""A run: its folder, its evaluations, and its summary (run.json, run.md, tables)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from .evaluation import RESULT_FILE, Evaluation, load_result, new_evaluation, utc_now
from .reports.run_summary import render_run_md, run_document, write_json
from .resolution import Options, Resolution, RowTask, resolve
from .results import EvaluationResult
from .sandbox.process import interrupt_all
from .suite import SuiteEntry, suite_entries
from .tables import suite_rows, task_rows, write_table

PLAN_FILE = "run_plan.json"
RUN_FILE = "run.json"
RUN_MD = "run.md"
TIMESTAMP = "%Y-%m-%dT%H-%M-%SZ"
T = TypeVar("T")


@dataclass
class RunPlan:
    """What a run was asked to do; written first, read by every later stage and by rescore."""

    run_id: str
    started_at: str
    options: dict[str, Any]
    experiment: str | None = None
    dagster_run_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def selection(self) -> Options:
        data = dict(self.options)
        data["paths"] = [Path(p) for p in data.get("paths", [])]
        data["experiment"] = Path(data["experiment"]) if data.get("experiment") else None
        return Options(**data)


def options_dict(options: Options) -> dict[str, Any]:
    data = asdict(options)
    data["paths"] = [str(Path(p).resolve()) for p in options.paths]
    data["experiment"] = str(Path(options.experiment).resolve()) if options.experiment else None
    return data


def new_run_dir(runs_dir: Path, now: datetime | None = None) -> Path:
    """``<runs-dir>/<UTC timestamp>``, with ``-2``, ``-3``... on a collision."""
    stamp = (now or datetime.now(UTC)).strftime(TIMESTAMP)
    runs_dir.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, 10_000):
        candidate = runs_dir / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise RuntimeError(f"cannot create a run folder under {runs_dir}")


def write_plan(run_dir: Path, plan: RunPlan) -> None:
    write_json(run_dir / PLAN_FILE, asdict(plan))


def read_plan(run_dir: Path) -> RunPlan:
    return RunPlan(**json.loads((run_dir / PLAN_FILE).read_text(encoding="utf-8")))


def run_timestamp(run_id: str) -> datetime:
    return datetime.strptime(run_id[: len("2026-01-01T00-00-00Z")], TIMESTAMP).replace(tzinfo=UTC)


def plan_evaluations(row_tasks: Iterable[RowTask], run_id: str, run_dir: Path, cache: Path | None) -> list[Evaluation]:
    return [
        new_evaluation(run_id, run_dir, row_task, replicate, cache)
        for row_task in row_tasks
        for replicate in range(1, row_task.replicates + 1)
    ]


def in_parallel(function: Callable[[T], T], items: list[T], workers: int) -> list[T]:
    """Apply ``function`` to every item with up to ``workers`` threads, keeping order."""
    pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(items))), thread_name_prefix="coder-eval")
    try:
        return list(pool.map(function, items))
    except BaseException as exc:
        if not isinstance(exc, Exception):  # interrupted (Ctrl-C, a terminated run): stop the commands now
            interrupt_all()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)


def default_concurrency() -> int:
    return os.cpu_count() or 1


def cache_dir(runs_dir: Path) -> Path:
    """The shared wheel cache of sandbox venvs (uv), kept beside the runs."""
    return runs_dir / ".cache" / "uv"


def collect_results(run_dir: Path) -> list[EvaluationResult]:
    return [load_result(path) for path in sorted(run_dir.glob(f"*/**/{RESULT_FILE}"))]


@dataclass
class RunSummary:
    document: dict[str, Any]
    results: list[EvaluationResult]
    suite: list[SuiteEntry]

    @property
    def passed(self) -> bool:
        return bool(self.document["passed"])


def summarize(run_dir: Path, plan: RunPlan, resolution: Resolution, tables_dir: Path) -> RunSummary:
    """Suite metrics, run.json, run.md, the comparison page and the run's Parquet files, from the task.json files.

    Then the runs index is refreshed. The comparison's imports (pandas, scipy,
    matplotlib) are deferred to here so that starting a run does not pay for them.
    """
    from .compare.pages import write_index, write_run_comparison

    results = collect_results(run_dir)
    suite = suite_entries(resolution.row_tasks, results)
    header = {
        "run_id": plan.run_id,
        "started_at": plan.started_at,
        "finished_at": utc_now(),
        "experiment": plan.experiment,
        "dagster_run_id": plan.dagster_run_id,
        "options": plan.options,
        "variants": list(dict.fromkeys(rt.variant_id for rt in resolution.row_tasks)),
    }
    document = run_document(header, results, resolution.skipped, suite)
    document["comparison"] = write_run_comparison(run_dir, results, header["variants"])
    write_json(run_dir / RUN_FILE, document)
    (run_dir / RUN_MD).write_text(render_run_md(document), encoding="utf-8")
    run_ts = run_timestamp(plan.run_id)
    for table, rows in task_rows(results, run_ts).items():
        write_table(tables_dir, table, plan.run_id, run_ts, rows)
    write_table(tables_dir, "suite_metrics", plan.run_id, run_ts, suite_rows(plan.run_id, run_ts, suite))
    write_index(run_dir.parent)
    return RunSummary(document, results, suite)


def resolve_plan(plan: RunPlan) -> Resolution:
    return resolve(plan.selection())
