"""Suite metrics of every criterion of a dataset-backed task, over its rows.

Per (base task, variant, criterion), every replicate of every row being one
observation: the scores' ``count``, ``mean``, ``median``, ``std`` (of the
population), ``min`` and ``max`` over the rows the criterion scored, and
``completion_rate``, the share of rows it scored (a row that ended as ERROR
before its criteria ran lowers it, and a classification's row whose check
failed before it read a label). With no row scored, the statistics are not
measured: absent from the metrics, as in coder_eval, and a threshold on one
fails (``completion_rate`` is measured over every row, so it is 0 then).

A classification criterion adds accuracy; precision, recall and F1 per
label; macro, weighted and micro F1; the confusion matrix, over the rows a
label came of (as coder_eval pairs them). Per-label metrics are reported for the
criterion's whole label space (yes/no, or the allowed labels) plus any
sentinel seen; macro and weighted F1 average over the labels present in the
truth or the predictions (as scikit-learn does). With no labelled row they
are not measured; a per-label metric with no denominator is 0.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any

from pydantic import BaseModel, Field

from .criteria.outcome import meets
from .models.criterion import Classification, CriterionBase
from .models.results import EvaluationResult
from .resolution import RowTask


class Threshold(BaseModel):
    metric: str
    minimum: float
    value: float | None  # None: no row measured the metric (every row an ERROR)
    passed: bool


class SuiteEntry(BaseModel):
    base_task_id: str
    variant_id: str
    criterion_index: int
    criterion_type: str
    metrics: dict[str, float] = Field(default_factory=dict)
    confusion_matrix: dict[str, dict[str, int]] = Field(default_factory=dict)
    thresholds: list[Threshold] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(t.passed for t in self.thresholds)


def classification_metrics(pairs: list[tuple[str, str]], labels: list[str]) -> dict[str, float]:
    """Metrics of (expected, observed) pairs; none without a pair (not measured)."""
    if not pairs:
        return {}
    total = len(pairs)
    seen = list(dict.fromkeys([*labels, *(label for pair in pairs for label in pair)]))
    present = {label for pair in pairs for label in pair}
    support = Counter(expected for expected, _ in pairs)
    metrics: dict[str, float] = {"accuracy": sum(e == o for e, o in pairs) / total}
    f1s: dict[str, float] = {}
    for label in seen:
        true_positive = sum(e == o == label for e, o in pairs)
        predicted = sum(o == label for _, o in pairs)
        precision = true_positive / predicted if predicted else 0.0
        recall = true_positive / support[label] if support[label] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        metrics |= {f"precision.{label}": precision, f"recall.{label}": recall, f"f1.{label}": f1}
        f1s[label] = f1
    averaged = [label for label in seen if label in present]
    metrics["macro_f1"] = sum(f1s[label] for label in averaged) / len(averaged) if averaged else 0.0
    metrics["weighted_f1"] = sum(f1s[label] * support[label] for label in seen) / total
    metrics["micro_f1"] = metrics["accuracy"]  # single-label: micro P = micro R = accuracy
    return metrics


def score_metrics(scores: list[float], rows: int) -> dict[str, float]:
    """The statistics of a criterion's scores over the rows that have one, and the share of ``rows`` that do."""
    return {name: shown(value) for name, value in _exact_score_metrics(scores, rows).items()}


def _exact_score_metrics(scores: list[float], rows: int) -> dict[str, float]:
    if not scores:  # nothing to take statistics of: only the share of rows scored, none
        return {"completion_rate": 0.0}
    metrics = {
        "count": float(len(scores)),
        "mean": statistics.fmean(scores),
        "median": statistics.median(scores),
        "std": statistics.pstdev(scores),
        "min": min(scores),
        "max": max(scores),
        "completion_rate": len(scores) / rows,
    }
    return metrics


def shown(value: float) -> float:
    """A metric as run.json, suite.json and the tables keep it."""
    return round(value, 6)


def judged(value: float, minimum: float) -> float:
    """A threshold's value as run.json and the tables keep it: to the 12 decimals its verdict is judged at
    (``meets``), so that comparing it with its minimum reads its verdict (to 6, 0.0816497 was kept as 0.08165,
    which a minimum of 0.08165 is not above, and the threshold was not met). A value met within that tolerance
    whose rounding falls below a minimum of more decimals is kept as the minimum (sqrt(2/9) against itself)."""
    kept = round(value, 12)
    return minimum if kept < minimum and meets(value, minimum) else kept


def _threshold(metrics: dict[str, float], metric: str, minimum: float) -> Threshold:
    """A suite threshold's verdict. One on a metric no row measured fails, as coder_eval's does (a gate on nothing
    is not met), with no value (coder_eval's ``actual_value: null``)."""
    if metric not in metrics:
        return Threshold(metric=metric, minimum=minimum, value=None, passed=False)
    return Threshold(
        metric=metric, minimum=minimum, value=judged(metrics[metric], minimum), passed=meets(metrics[metric], minimum)
    )


def _result_of(result: EvaluationResult, index: int) -> tuple[float | None, str | None]:
    """The criterion's score on this row (None: it never ran, or its judge gave no answer) and its observed label
    (None: no classification came of it, as coder_eval pairs only the rows with one)."""
    for criterion in result.criteria:
        if criterion.index == index:
            score = criterion.score if criterion.evaluation_status == "evaluated" else None
            return score, criterion.observed_label
    return None, None


def suite_entries(row_tasks: list[RowTask], results: list[EvaluationResult]) -> list[SuiteEntry]:
    """One entry per criterion of each dataset-backed task, per variant."""
    by_key: dict[tuple[str, str], list[EvaluationResult]] = {(r.variant_id, r.task_id): [] for r in results}
    for result in results:
        by_key[(result.variant_id, result.task_id)].append(result)
    groups: dict[tuple[str, str, int], list[tuple[float | None, str | None, str]]] = defaultdict(list)
    specs: dict[tuple[str, str, int], CriterionBase] = {}
    for row_task in row_tasks:
        if row_task.row_id is None:
            continue
        for index, criterion in enumerate(row_task.task.success_criteria):
            key = (row_task.base_task_id, row_task.variant_id, index)
            specs.setdefault(key, criterion)
            expected = criterion.expected() if isinstance(criterion, Classification) else ""
            for result in by_key.get((row_task.variant_id, row_task.task_id), []):
                groups[key].append((*_result_of(result, index), expected))
    entries = []
    for key, observations in groups.items():
        criterion = specs[key]
        # a classification's row is scored when a label came of it: one whose check failed (a link out, two
        # matching files) has a 0 but no label, and lowers completion_rate as a row that never ran does
        labelled = not isinstance(criterion, Classification)
        scores = [score for score, observed, _ in observations if score is not None and (labelled or observed)]
        metrics = _exact_score_metrics(scores, len(observations))
        matrix: dict[str, dict[str, int]] = defaultdict(dict)
        if isinstance(criterion, Classification):
            pairs = [(expected, observed) for _, observed, expected in observations if observed is not None]
            metrics |= classification_metrics(pairs, criterion.label_space())
            for (expected, observed), count in sorted(Counter(pairs).items()):
                matrix[expected][observed] = count
        thresholds = [_threshold(metrics, m, minimum) for m, minimum in criterion.suite_thresholds.items()]
        metrics = {name: shown(value) for name, value in metrics.items()}
        entries.append(
            SuiteEntry(
                base_task_id=key[0],
                variant_id=key[1],
                criterion_index=key[2],
                criterion_type=criterion.type,
                metrics=metrics,
                confusion_matrix=dict(matrix),
                thresholds=thresholds,
            )
        )
    return entries


def suite_json(entries: list[SuiteEntry]) -> list[dict[str, Any]]:
    return [entry.model_dump(mode="json") for entry in entries]
