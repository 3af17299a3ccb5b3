"""`coder-eval run` and `coder-eval rescore`: the CLI skin over the Dagster launch."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

from .core import progress
from .core.evaluation import utc_now
from .core.problems import InvalidInput
from .core.resolution import Options, Resolution, resolve
from .core.runs import RUN_FILE, JudgeSettings, RunPlan, new_run_dir, options_dict, read_plan, write_plan
from .core.sandbox.process import INTERRUPTED

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
MAX_TABLE_ROWS = 40


def _experiment_id(resolution: Resolution) -> str | None:
    return resolution.experiment.model.experiment_id if resolution.experiment else None


def _ids(row_tasks: list[Any]) -> tuple[list[str], list[str]]:
    return list(dict.fromkeys(rt.task_id for rt in row_tasks)), list(dict.fromkeys(rt.variant_id for rt in row_tasks))


def run(options: Options, runs_dir: Path, concurrency: int, judges: JudgeSettings | None = None) -> int:
    resolution = resolve(options)
    if resolution.problems:
        raise InvalidInput(resolution.problems)
    instance = _open_instance()
    run_dir = new_run_dir(runs_dir)
    plan = RunPlan(
        run_id=run_dir.name, started_at=utc_now(), options=options_dict(options), experiment=_experiment_id(resolution)
    )
    return _launch(instance, plan, run_dir, runs_dir, concurrency, resolution, judges or JudgeSettings(), rescore=False)


def rescore(run_dir: Path, concurrency: int, judges: JudgeSettings | None = None) -> int:
    if not (run_dir / "run_plan.json").is_file():
        print(f"coder-eval rescore: {run_dir} is not a run folder (no run_plan.json)", file=sys.stderr)
        return EXIT_USAGE
    plan = read_plan(run_dir)
    resolution = resolve(plan.selection())
    if resolution.problems:
        raise InvalidInput(resolution.problems)
    present = {p.parent.parent.relative_to(run_dir).as_posix() for p in run_dir.glob("*/**/run_state.json")}
    resolution.row_tasks = [rt for rt in resolution.row_tasks if f"{rt.variant_id}/{rt.task_id}" in present]
    judges = judges or JudgeSettings()
    return _launch(_open_instance(), plan, run_dir, run_dir.parent, concurrency, resolution, judges, rescore=True)


def _open_instance() -> Any:
    """Import Dagster and open the instance before the run's clock starts."""
    from .launch import local_instance

    return local_instance()


def _launch(
    instance: Any,
    plan: RunPlan,
    run_dir: Path,
    runs_dir: Path,
    concurrency: int,
    resolution: Resolution,
    judges: JudgeSettings,
    rescore: bool,
) -> int:
    from .defs.evaluation.resources import CoderEvalSettings
    from .launch import execute, failure_messages

    plan.dagster_run_id = str(uuid.uuid4())  # Dagster run ids are UUID4 strings
    write_plan(run_dir, plan)
    settings = CoderEvalSettings(
        run_dir=str(run_dir),
        runs_dir=str(runs_dir),
        concurrency=concurrency,
        rescore=rescore,
        api_backend=judges.backend,
        judge_concurrency=judges.judge_concurrency,
        only_criteria=judges.only_criteria,
    )
    task_ids, variant_ids = _ids(resolution.row_tasks)
    with _ProgressBar(sum(rt.replicates for rt in resolution.row_tasks)):
        result = execute(instance, settings, task_ids, variant_ids, plan.dagster_run_id, rescore)
    failures = failure_messages(result)
    if INTERRUPTED.is_set():
        print(f"coder-eval: interrupted; what finished is in {run_dir}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if failures or not (run_dir / RUN_FILE).is_file():
        print("coder-eval: the run did not complete:", *failures, sep="\n  ", file=sys.stderr)
        return EXIT_FAILED
    return _report(run_dir)


def _report(run_dir: Path) -> int:
    import json

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    document = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
    console = Console()
    tasks = document["tasks"]
    shown = tasks if len(tasks) <= MAX_TABLE_ROWS else [t for t in tasks if not t["success"]][:MAX_TABLE_ROWS]
    table = Table(title=f"run {document['run_id']}" + ("" if shown is tasks else " (not passed only)"))
    for column in ("variant", "task", "#", "status", "score", "criteria", "seconds"):
        table.add_column(column, justify="right" if column in ("#", "score", "seconds") else "left")
    for task in shown:
        gating = [c for c in task["criteria"] if c["gating"]]
        style = "green" if task["success"] else "red"
        table.add_row(
            task["variant_id"],
            task["task_id"],
            f"{task['replicate']:02d}",
            f"[{style}]{task['final_status']}[/]",
            f"{task['weighted_score']:.3f}",
            f"{sum(c['passed'] for c in gating)}/{len(gating)}",
            f"{task['duration_s']:.2f}",
        )
    if shown:
        console.print(table)
    for entry in document["suite"]:
        for threshold in entry["thresholds"]:
            mark = "[green]met[/]" if threshold["passed"] else "[red]NOT met[/]"
            label = escape(f"suite {entry['base_task_id']} [{entry['variant_id']}] {threshold['metric']}")
            value = f"{threshold['value']:.3f} >= {threshold['minimum']:g}"
            console.print(f"{label} {value}: {mark}", highlight=False)
    counts = ", ".join(f"{n} {status}" for status, n in document["counts"].items()) or "no tasks"
    verdict = "[green]PASSED[/]" if document["passed"] else "[red]FAILED[/]"
    skipped = f", {len(document['skipped_tasks'])} skipped" if document["skipped_tasks"] else ""
    console.print(f"{verdict} {counts}{skipped} · {escape(str(run_dir))}", highlight=False)
    return EXIT_OK if document["passed"] else EXIT_FAILED


class _ProgressBar:
    """A rich progress bar fed by the core's progress events (evaluations finished)."""

    def __init__(self, total: int):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("evaluating"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.bar = self.progress.add_task("evaluating", total=total)

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        if event == "finished":
            self.progress.advance(self.bar)

    def __enter__(self) -> _ProgressBar:
        self.progress.start()
        progress.subscribe(self)
        return self

    def __exit__(self, *exc: object) -> None:
        progress.unsubscribe(self)
        self.progress.stop()
