"""A run's evaluations as one pandas frame: from its Parquet file, or from its task.json files.

The Parquet file of ``task_results`` is read when the run wrote one (fast:
one file per run; ``<runs-dir>/tables`` beside the run folder, which need not
exist any more); a run folder without it (copied alone, or still being
summarized) is read from its task.json files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import yaml

from ..layout import PLAN_FILE, RESULT_FILE, RUN_FILE, TABLES_DIR, evaluation_files, load_result, report_path
from ..models.results import EARLIER_STATUSES, EvaluationResult
from ..tables import task_result_row

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


@dataclass
class RunRows:
    """One run's evaluations (one row per row-task x variant x replicate) and its variants in order."""

    run_dir: Path
    run_id: str
    variants: list[str]
    evaluations: pd.DataFrame
    sequential: SequentialSettings = SequentialSettings()


def evaluations_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The comparison's columns (task.json or Parquet rows), with tokens, report and batch (null if none) added.

    Statuses are read as now written (earlier run folders' names mapped).
    """
    frame = frame[[*COLUMNS, *([BATCH] if BATCH in frame else [])]].copy()
    if BATCH not in frame:
        frame[BATCH] = np.nan
    frame["final_status"] = frame["final_status"].replace(EARLIER_STATUSES)
    frame["tokens"] = frame["input_tokens"].astype("float64") + frame["output_tokens"].astype("float64")
    frame["cost_usd"] = frame["cost_usd"].astype("float64")
    frame["success"] = frame["success"].astype(bool)
    keys = zip(frame["variant_id"].tolist(), frame["task_id"].tolist(), frame["replicate"].tolist(), strict=True)
    frame["report"] = [report_path(v, t, int(r)) for v, t, r in keys]
    return frame


def results_frame(results: list[EvaluationResult]) -> pd.DataFrame:
    """The task_results table's rows of these evaluations (``batch`` null unless the table has that column)."""
    records = [
        {"task_id": r.task_id, "base_task_id": r.base_task_id, "variant_id": r.variant_id, "replicate": r.replicate}
        | task_result_row(r)
        for r in results
    ]
    return evaluations_frame(pd.DataFrame.from_records(records, columns=[*COLUMNS, BATCH]))


def _parquet_file(run_dir: Path) -> Path | None:
    found = sorted((run_dir.parent / TABLES_DIR / "task_results").glob(f"run_date=*/{run_dir.name}.parquet"))
    return found[0] if found else None


def _run_document(run_dir: Path) -> dict[str, Any]:
    """run.json as plain JSON (empty without one): read once for the variant order and the sequential settings."""
    run_file = run_dir / RUN_FILE
    document: dict[str, Any] = json.loads(run_file.read_text(encoding="utf-8")) if run_file.is_file() else {}
    return document


def _variant_order(run_dir: Path, document: dict[str, Any], present: Iterable[str]) -> list[str]:
    """run.json's variant order (the experiment's), else the experiment file's, else sorted."""
    present = set(present)
    declared: list[str | None] = document.get("variants") or []  # a variant may lack its variant_id
    plan_file = run_dir / PLAN_FILE
    if not declared and plan_file.is_file():
        experiment = json.loads(plan_file.read_text(encoding="utf-8")).get("options", {}).get("experiment")
        if experiment and Path(experiment).is_file():
            variants = (yaml.safe_load(Path(experiment).read_text(encoding="utf-8")) or {}).get("variants") or []
            declared = [v.get("variant_id") for v in variants if isinstance(v, dict)]
    ordered = [v for v in declared if v is not None and v in present]
    return ordered + sorted(present - set(ordered))


def _sequential_settings(document: dict[str, Any]) -> SequentialSettings:
    """The alpha and margin the run decided with, so that compare redraws the run's own sequence."""
    sequential = document.get("sequential") or {}
    return SequentialSettings(sequential.get("alpha", SequentialSettings.alpha), sequential.get("margin"))


def load_run(run_dir: Path) -> RunRows:
    """Every evaluation of the run ``run_dir`` (a run folder, or the name its tables know it by)."""
    run_dir = run_dir.resolve()
    parquet = _parquet_file(run_dir)
    if parquet is not None:
        columns = [*COLUMNS, *([BATCH] if BATCH in pq.read_schema(parquet).names else [])]
        evaluations = evaluations_frame(pq.read_table(parquet, columns=columns).to_pandas())
    elif run_dir.is_dir():
        evaluations = results_frame([load_result(p) for p in evaluation_files(run_dir, RESULT_FILE)])
    else:
        raise CompareError(f"{run_dir}: no such run folder")
    if evaluations.empty:
        raise CompareError(f"{run_dir}: no evaluations (neither a task_results Parquet file nor task.json files)")
    document = _run_document(run_dir)
    variants = _variant_order(run_dir, document, evaluations["variant_id"])
    return RunRows(run_dir, run_dir.name, variants, evaluations, _sequential_settings(document))
