"""A run's evaluations: as read (Arrow columns or task.json records), and as one pandas frame when asked.

The Parquet file of ``task_results`` is read when the run wrote one (fast:
one file per run; ``<runs-dir>/tables`` beside the run folder, which need not
exist any more); a run folder without it (copied alone, or still being
summarized) is read from its task.json files.

The pandas frame is built on first use: the figures of one arm and the
run-to-run verdict read ``RunRows.outcomes`` (plain values), so a run that
compares a few rows with an earlier run does not import pandas (with scipy,
about 1 s of a run's end: docs/performance.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from ..layout import (
    EXPERIMENT_FILE,
    LATEST_LINK,
    PLAN_FILE,
    RUN_FILE,
    SANDBOX_DIRS,
    is_runs_folder,
    read_json,
    report_path,
    run_results,
    run_table_files,
)
from ..models.results import EARLIER_STATUSES, EvaluationResult
from ..problems import DOCUMENT, InvalidInput, Problem, not_a_mapping
from ..tables import task_result_row, variant_order

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = [
    "task_id",
    "base_task_id",
    "variant_id",
    "replicate",
    "final_status",
    "success",
    "weighted_score",
    "cost_usd",
    "input_tokens",
    "output_tokens",
    "turns",
    "duration_s",
    "tags",
]
BATCH = "batch"  # a sequential A/B's batch number of each evaluation; read where the run recorded it


class CompareError(ValueError):
    """A comparison that cannot be made as asked (no such run, variant or rows); a one-line message."""


@dataclass(frozen=True)
class SequentialSettings:
    """The confidence level and equivalence margin of the run's sequential A/B (run.json ``sequential``)."""

    alpha: float = 0.05
    margin: float | None = None


@dataclass(frozen=True)
class Outcome:
    """One evaluation as an arm's own figures and the run-to-run verdict read it (no pandas)."""

    variant_id: str
    task_id: str
    base_task_id: str
    final_status: str  # as now written (earlier run folders' names mapped)
    success: bool
    weighted_score: float  # NaN where the row has none, as in the frame
    cost_usd: float


OUTCOME_COLUMNS = ("variant_id", "task_id", "base_task_id", "final_status", "success", "weighted_score", "cost_usd")


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _outcome(variant_id: str, task_id: str, base: str, status: str, success: Any, score: Any, cost: Any) -> Outcome:
    """The frame's reading of one row (``evaluations_frame``): statuses mapped, success as bool, nulls as NaN."""
    status = EARLIER_STATUSES.get(status, status)
    return Outcome(variant_id, task_id, base, status, bool(success), _number(score), _number(cost))


Records = list[dict[str, Any]]  # task.json rows, in the task_results table's columns
ERROR = "ERROR"  # an evaluation with no verdict: out of every rate


@dataclass
class RunRows:
    """One run's evaluations (one row per row-task x variant x replicate) and its variants in order.

    ``source`` is what was read: the Parquet file's columns, or the task.json
    files' rows.
    """

    run_dir: Path
    run_id: str
    variants: list[str]
    source: pa.Table | Records
    sequential: SequentialSettings = SequentialSettings()

    @cached_property
    def evaluations(self) -> pd.DataFrame:
        """Every evaluation as one frame, for the paired analysis; imports pandas."""
        import pandas as pd

        if isinstance(self.source, pa.Table):
            return evaluations_frame(self.source.to_pandas())
        return evaluations_frame(pd.DataFrame.from_records(self.source, columns=[*COLUMNS, BATCH]))

    @cached_property
    def outcomes(self) -> list[Outcome]:
        """Every evaluation in the frame's order, as plain values."""
        columns = [_column(self.source, name) for name in OUTCOME_COLUMNS]
        return [_outcome(*values) for values in zip(*columns, strict=True)]

    def valid(self, variant_id: str) -> list[Outcome]:
        """A variant's non-ERROR evaluations: the ones with a verdict to rate."""
        return [o for o in self.outcomes if o.variant_id == variant_id and o.final_status != ERROR]

    def success_rates(self) -> dict[str, float | None]:
        """Each variant's success rate over its non-ERROR evaluations (None: every one an ERROR), no pandas."""
        return {variant: success_rate(self.valid(variant)) for variant in self.variants}


def success_rate(valid: list[Outcome]) -> float | None:
    return sum(o.success for o in valid) / len(valid) if valid else None


def _column(source: pa.Table | Records, name: str) -> list[Any]:
    """One column of what was read, as plain values."""
    if isinstance(source, pa.Table):
        values: list[Any] = source.column(name).to_pylist()
        return values
    return [record[name] for record in source]


def evaluations_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The comparison's columns (task.json or Parquet rows), with tokens, report and batch (null if none) added.

    Statuses are read as now written (earlier run folders' names mapped).
    """
    frame = frame[[*COLUMNS, *([BATCH] if BATCH in frame else [])]].copy()
    if BATCH not in frame:
        frame[BATCH] = float("nan")
    frame["final_status"] = frame["final_status"].replace(EARLIER_STATUSES)
    frame["tokens"] = frame["input_tokens"].astype("float64") + frame["output_tokens"].astype("float64")
    frame["cost_usd"] = frame["cost_usd"].astype("float64")
    frame["success"] = frame["success"].astype(bool)
    keys = zip(frame["variant_id"].tolist(), frame["task_id"].tolist(), frame["replicate"].tolist(), strict=True)
    frame["report"] = [report_path(v, t, int(r)) for v, t, r in keys]
    return frame


def result_records(results: list[EvaluationResult]) -> Records:
    """The task_results table's rows of these evaluations (no ``batch``: the frame's is null)."""
    return [
        {"task_id": r.task_id, "base_task_id": r.base_task_id, "variant_id": r.variant_id, "replicate": r.replicate}
        | task_result_row(r)
        for r in results
    ]


def _read_rows(parquet: Path) -> pa.Table:
    """The run's rows in its task_results file; one that does not read (cut short, overwritten) is a CompareError
    naming it, as ``history`` says it."""
    try:  # one file: ParquetFile, not read_table, whose pyarrow.dataset imports pandas (0.3 s)
        file = pq.ParquetFile(parquet)
        return file.read(columns=[*COLUMNS, *([BATCH] if BATCH in file.schema_arrow.names else [])])
    except (OSError, pa.ArrowException) as exc:
        raise CompareError(f"{parquet}: not a readable task_results file ({exc})") from None


def _parquet_file(run_dir: Path) -> Path | None:
    found = run_table_files(run_dir.parent, run_dir.name, "task_results")
    return found[0] if found else None


def _mapping(path: Path, shown: Path) -> dict[str, Any]:
    """A run folder's JSON file that must hold a mapping (run.json, experiment.json, run_plan.json); one that does
    not is an ``InvalidInput`` naming it (``shown``: as the user named it), as ``report`` says it."""
    document = read_json(path)
    if not isinstance(document, dict):
        raise InvalidInput([Problem(str(shown), None, DOCUMENT, not_a_mapping(document))])
    return document


def _run_document(run_dir: Path, shown: Path | None = None) -> dict[str, Any]:
    """run.json as plain JSON (empty without one): read once for the variant order and the sequential settings."""
    run_file = run_dir / RUN_FILE
    return _mapping(run_file, (shown or run_dir) / RUN_FILE) if run_file.is_file() else {}


def _variant_order(
    run_dir: Path, document: dict[str, Any], present: Iterable[str], parquet: Path | None, shown: Path | None = None
) -> list[str]:
    """run.json's variant order (the experiment's), else experiment.json's (coder_eval's run.json has none), else its
    table file's (a pruned run), else the experiment file's, else sorted."""
    present = set(present)
    shown = shown or run_dir
    declared: list[str | None] = _names(document.get("variants"))  # a variant may lack its variant_id
    experiment_file = run_dir / EXPERIMENT_FILE
    if not declared and experiment_file.is_file():
        declared = _names(_mapping(experiment_file, shown / EXPERIMENT_FILE).get("variant_ids"))
    if not declared and parquet is not None:
        declared = [*variant_order(parquet)]
    plan_file = run_dir / PLAN_FILE
    if not declared and plan_file.is_file():
        options = _mapping(plan_file, shown / PLAN_FILE).get("options")
        experiment = options.get("experiment") if isinstance(options, dict) else None
        if isinstance(experiment, str) and experiment and Path(experiment).is_file():
            loaded = yaml.safe_load(Path(experiment).read_text(encoding="utf-8"))
            variants = loaded.get("variants") if isinstance(loaded, dict) else None
            declared = [v.get("variant_id") for v in variants or [] if isinstance(v, dict)]
    ordered = [v for v in declared if isinstance(v, str) and v in present]
    return ordered + sorted(present - set(ordered))


def _names(value: Any) -> list[str | None]:
    """A list of variant ids as a run's file holds it; anything else (damaged) as none."""
    return [item if isinstance(item, str) else None for item in value] if isinstance(value, list) else []


def _sequential_settings(document: dict[str, Any]) -> SequentialSettings:
    """The alpha and margin the run decided with, so that compare redraws the run's own sequence."""
    sequential = document.get("sequential")
    sequential = sequential if isinstance(sequential, dict) else {}
    return SequentialSettings(sequential.get("alpha", SequentialSettings.alpha), sequential.get("margin"))


def read_run_rows(run_dir: Path) -> RunRows:
    """Every evaluation of the run ``run_dir`` (a run folder, or the name its tables know it by)."""
    shown = run_dir
    if run_dir.is_dir() and (why := not_one_run(run_dir)):
        raise CompareError(why)
    run_dir = run_dir.resolve()
    parquet = _parquet_file(run_dir)
    source: pa.Table | Records
    if parquet is not None:
        source = _read_rows(parquet)
    elif run_dir.is_dir():
        source = result_records(list(run_results(run_dir).values()))
    else:
        raise CompareError(f"{run_dir}: no such run folder")
    if len(source) == 0:
        raise CompareError(f"{run_dir}: no evaluations (neither a task_results Parquet file nor task.json files)")
    document = _run_document(run_dir, shown)
    variants = _variant_order(run_dir, document, _column(source, "variant_id"), parquet, shown)
    return RunRows(run_dir, run_dir.name, variants, source, _sequential_settings(document))


RUN_MARKS = (PLAN_FILE, RUN_FILE)  # a run folder holds one: ours its plan (and run.json once summarized), coder_eval's
SKIPPED_WHEN_LOOKING = frozenset({*SANDBOX_DIRS, "node_modules", "__pycache__"})


def not_one_run(folder: Path) -> str | None:
    """Why the folder ``report`` or ``compare`` was given is not one run's, though it may hold evaluations: a folder
    inside a run (one above it holds run_plan.json or run.json), or a runs folder (tables/ beside index.html, a
    ``latest`` link) or any folder holding run folders below it, whose runs would be read as one. None: a run folder,
    ours or coder_eval's, or a folder of evaluations that is neither (read as one run)."""
    if any((folder / name).is_file() for name in RUN_MARKS):
        return None
    for above in folder.absolute().parents:
        if any((above / name).is_file() for name in RUN_MARKS):
            run = _shown_path(above, folder)
            return f"{folder} is a folder inside the run folder {run}: name the run folder ({run})"
    inner = _first_run_below(folder)
    if inner is not None:
        return f"{folder} holds run folders ({_shown_path(inner, folder)}...), not one run: name one run folder"
    if is_runs_folder(folder) or (folder / LATEST_LINK).is_symlink():
        return f"{folder} is a runs folder, not a run folder: name one run folder in it"
    return None


def _first_run_below(folder: Path) -> Path | None:
    """The first folder below ``folder`` that holds a run's marks (run_plan.json or run.json), if any; hidden
    folders, preserved sandboxes and links are passed over."""
    for top, folders, names in os.walk(folder):
        if top != str(folder) and any(name in names for name in RUN_MARKS):
            return Path(top)
        folders[:] = sorted(name for name in folders if not name.startswith(".") and name not in SKIPPED_WHEN_LOOKING)
    return None


def _shown_path(path: Path, given: Path) -> Path:
    """A folder near the one the user ``given``, named as that one was: absolute, or from the current folder when
    it is under it."""
    absolute = path.absolute()
    if given.is_absolute():
        return absolute
    here = Path.cwd()
    return absolute.relative_to(here) if absolute.is_relative_to(here) and absolute != here else absolute
