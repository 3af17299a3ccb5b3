"""A run's report files, written from its summary: run.json, run.md, experiment.json, variant.json, suite.json and
the run viewer (index.html).

The shapes are the report schema's (``models/report.py``); this module
fills the suite roll-ups from the evaluations and the suite metrics, and
writes every file whole (``layout.write_atomically``).
"""

from __future__ import annotations

import contextlib
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..layout import (
    EXPERIMENT_FILE,
    EXPERIMENT_MD,
    RESULT_FILE,
    RUN_FILE,
    RUN_MD,
    VARIANT_MD,
    evaluation_folder,
    suite_file,
    variant_file,
    write_atomically,
)
from ..models.report import (
    CriterionAggregate,
    CriterionStats,
    ExperimentResult,
    FailedSample,
    RunSummary,
    SuiteRollup,
    ThresholdCheck,
)
from ..models.results import STATUS_CATEGORY, CriterionResult, EvaluationResult
from ..suite import SuiteEntry, score_metrics
from ..version import PACKAGE, framework_version
from .experiment_md import render_experiment_md, render_variant_md
from .run_summary import render_run_md
from .run_viewer import write_run_viewer

DEFAULT_EXPERIMENT = "default"  # experiment.json's id for a run without an experiment, as coder_eval names it


def environment_info() -> dict[str, Any]:
    """Where the run ran: our version and Dagster's, Python, the platform."""
    info: dict[str, Any] = {PACKAGE: framework_version(), "python": platform.python_version()}
    info["platform"] = platform.platform()
    with contextlib.suppress(PackageNotFoundError):
        info["dagster"] = version("dagster")
    return info


def write_json(path: Path, model: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, model.model_dump_json(indent=2))


def write_reports(
    run_dir: Path, report: RunSummary, results: list[EvaluationResult], suite: list[SuiteEntry], description: str
) -> None:
    """run.md, experiment.json and .md, every variant.json and .md, every suite.json, the viewer, and run.json last:
    a run whose reports could not all be written (a full disk) has no run.json saying it passed."""
    write_atomically(run_dir / RUN_MD, render_run_md(report))
    experiment = ExperimentResult.of(
        report.experiment or DEFAULT_EXPERIMENT,
        description,
        report.variants,
        report.task_results,
        report.total_duration_seconds,
    )
    write_json(run_dir / EXPERIMENT_FILE, experiment)
    write_atomically(run_dir / EXPERIMENT_MD, render_experiment_md(experiment))
    for variant_id, aggregate in experiment.variant_aggregates.items():
        write_json(variant_file(run_dir, variant_id), aggregate)
        write_atomically(variant_file(run_dir, variant_id).with_name(VARIANT_MD), render_variant_md(aggregate))
    for rollup in suite_rollups(run_dir, results, suite):
        write_json(suite_file(run_dir, rollup.variant_id, rollup.suite_id), rollup)
    write_run_viewer(run_dir, results, report.variants, report)
    write_json(run_dir / RUN_FILE, report)


# ----------------------------------------------------------------------------- suite roll-ups


def suite_rollups(run_dir: Path, results: list[EvaluationResult], suite: list[SuiteEntry]) -> list[SuiteRollup]:
    """One roll-up per dataset-backed task and variant: every replicate of every row is a row, in the order
    ``results`` give them (the plan's: ``runs.in_plan_order``)."""
    groups: dict[tuple[str, str], list[EvaluationResult]] = {}
    for result in results:
        if result.row_id is not None:
            groups.setdefault((result.base_task_id, result.variant_id), []).append(result)
    entries = {(e.base_task_id, e.variant_id, e.criterion_index): e for e in suite}
    return [_rollup(run_dir, suite_id, variant_id, rows, entries) for (suite_id, variant_id), rows in groups.items()]


def _rollup(
    run_dir: Path,
    suite_id: str,
    variant_id: str,
    rows: list[EvaluationResult],
    entries: dict[tuple[str, str, int], SuiteEntry],
) -> SuiteRollup:
    categories = [STATUS_CATEGORY[r.final_status] for r in rows]
    graded = [r.weighted_score for r, c in zip(rows, categories, strict=True) if c != "not_graded"]
    # the task's gated criteria too: one that no row ran (every row an ERROR) still fails its thresholds
    gated = (index for suite, variant, index in entries if (suite, variant) == (suite_id, variant_id))
    indexes = list(dict.fromkeys([*(c.index for r in rows for c in r.criteria), *gated]))
    return SuiteRollup(
        suite_id=suite_id,
        variant_id=variant_id,
        rows_total=len(rows),
        rows_passed=categories.count("succeeded"),
        rows_failed=categories.count("failed"),
        rows_error=categories.count("error"),
        rows_not_graded=categories.count("not_graded"),
        average_weighted_score=sum(graded) / len(graded) if graded else None,
        criterion_stats=_criterion_stats(rows),
        failed_samples=[_failed_sample(run_dir, r) for r in rows if not r.success],
        criterion_aggregates=[
            _aggregate(rows, index, entries.get((suite_id, variant_id, index))) for index in sorted(indexes)
        ],
    )


def _criterion_stats(rows: list[EvaluationResult]) -> list[CriterionStats]:
    """Per criterion type. ``rows_evaluated`` counts results, as coder_eval's release does (two criteria of a type
    on a row are two), though its field's description says rows: scripts written for it read the number it writes."""
    by_type: dict[str, list[CriterionResult]] = {}
    for row in rows:
        for criterion in row.criteria:
            by_type.setdefault(criterion.type, []).append(criterion)
    return [
        CriterionStats(
            criterion_type=kind,
            rows_evaluated=len(found),
            average_score=sum(c.score for c in found) / len(found),
            error_count=sum(c.error is not None for c in found),
        )
        for kind, found in sorted(by_type.items())
    ]


def _failed_sample(run_dir: Path, row: EvaluationResult) -> FailedSample:
    folder = evaluation_folder(run_dir, row.variant_id, row.task_id, row.replicate)
    failing = [c for c in row.criteria if c.gating and not c.passed]
    return FailedSample(
        row_id=row.row_id,
        task_id=row.task_id,
        final_status=row.final_status,
        weighted_score=row.weighted_score,
        failure_reasons=[
            f"{c.type} \u201c{c.description}\u201d: {c.error or c.details_text or 'failed'}" for c in failing
        ],
        error_message=row.error,
        task_json_relpath=(folder / RESULT_FILE).relative_to(run_dir).as_posix(),
        replicate_index=row.replicate,
    )


def _aggregate(rows: list[EvaluationResult], index: int, entry: SuiteEntry | None) -> CriterionAggregate:
    """One criterion over the rows (a row whose criteria never ran, an ERROR, or whose judge gave no answer, is
    excluded)."""
    ran = [c for row in rows for c in row.criteria if c.index == index]
    found = [c for c in ran if c.evaluation_status == "evaluated"]
    scores = [c.score for c in found]
    metrics = score_metrics(scores, len(rows)) | (  # (no row scored: its completion rate only, no mean of nothing)
        entry.metrics if entry else {}
    )
    checks = [
        ThresholdCheck(metric=t.metric, min_value=t.minimum, actual_value=t.value, passed=t.passed)
        for t in (entry.thresholds if entry else [])
    ]
    return CriterionAggregate(
        criterion_type=ran[0].type if ran else entry.criterion_type if entry else "",
        description=ran[0].description if ran else _written_description(rows, index),
        error=None if ran else "no row ran this criterion (every row ended before its criteria were checked)",
        rows_total=len(rows),
        rows_excluded=len(rows) - len(found),
        metrics=metrics,
        threshold_checks=checks,
        details=_classification_details(entry) if entry and entry.confusion_matrix else {},
    )


def _written_description(rows: list[EvaluationResult], index: int) -> str | None:
    """A criterion's description as the task wrote it (its rows never ran it: each one's task is recorded)."""
    for row in rows:
        written = row.task_config.resolved.get("success_criteria") if row.task_config else None
        if isinstance(written, list) and index < len(written) and isinstance(written[index], dict):
            return str(written[index].get("description") or "") or None
    return None


def _classification_details(entry: SuiteEntry) -> dict[str, Any]:
    """Labels, per-label precision/recall/F1 with support, and the confusion pairs."""
    confusion = [
        {"expected": expected, "observed": observed, "count": count}
        for expected, row in entry.confusion_matrix.items()
        for observed, count in row.items()
    ]
    labels = sorted({name.split(".", 1)[1] for name in entry.metrics if name.startswith("f1.")})
    support = {label: sum(entry.confusion_matrix.get(label, {}).values()) for label in labels}
    per_label = [
        {
            "label": label,
            "precision": entry.metrics[f"precision.{label}"],
            "recall": entry.metrics[f"recall.{label}"],
            "f1": entry.metrics[f"f1.{label}"],
            "support": support[label],
        }
        for label in labels
    ]
    return {
        "labels": labels,
        "per_label": per_label,
        "confusion": confusion,
        "total_pairs": sum(sum(row.values()) for row in entry.confusion_matrix.values()),
    }
