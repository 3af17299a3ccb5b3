"""Suite metrics of classification criteria over a dataset's rows.

Per (base task, variant, criterion): accuracy; precision, recall and F1 per
label; macro, weighted and micro F1; the confusion matrix. Every replicate of
every row is one observation. A row whose criteria never ran (ERROR) counts
as observed ``(none)``, so failures are not silently dropped from the rollup.
Per-label metrics are reported for the criterion's whole label space (yes/no,
or the allowed labels) plus any sentinel seen; macro and weighted F1 average
over the labels present in the truth or the predictions (as scikit-learn
does). A metric with no denominator is 0.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from pydantic import BaseModel, Field

from .criteria.classification_match import NONE_LABEL
from .models.criterion import Classification
from .models.results import EvaluationResult
from .resolution import RowTask


class Threshold(BaseModel):
    metric: str
    minimum: float
    value: float
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
    """Metrics of (expected, observed) pairs."""
    total = len(pairs)
    seen = list(dict.fromkeys([*labels, *(label for pair in pairs for label in pair)]))
    present = {label for pair in pairs for label in pair}
    support = Counter(expected for expected, _ in pairs)
    metrics: dict[str, float] = {"accuracy": sum(e == o for e, o in pairs) / total if total else 0.0}
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
    metrics["weighted_f1"] = sum(f1s[label] * support[label] for label in seen) / total if total else 0.0
    metrics["micro_f1"] = metrics["accuracy"]  # single-label: micro P = micro R = accuracy
    return {name: round(value, 6) for name, value in metrics.items()}


def _observed(result: EvaluationResult, index: int) -> str:
    for criterion in result.criteria:
        if criterion.index == index:
            return criterion.observed_label or NONE_LABEL
    return NONE_LABEL


def suite_entries(row_tasks: list[RowTask], results: list[EvaluationResult]) -> list[SuiteEntry]:
    """One entry per classification criterion of each dataset-backed task, per variant."""
    by_key: dict[tuple[str, str], list[EvaluationResult]] = {(r.variant_id, r.task_id): [] for r in results}
    for result in results:
        by_key[(result.variant_id, result.task_id)].append(result)
    groups: dict[tuple[str, str, int], list[tuple[str, str]]] = defaultdict(list)
    specs: dict[tuple[str, str, int], Classification] = {}
    for row_task in row_tasks:
        if row_task.row_id is None:
            continue
        for index, criterion in enumerate(row_task.task.success_criteria):
            if not isinstance(criterion, Classification):
                continue
            key = (row_task.base_task_id, row_task.variant_id, index)
            specs.setdefault(key, criterion)
            for result in by_key.get((row_task.variant_id, row_task.task_id), []):
                groups[key].append((criterion.expected(), _observed(result, index)))
    entries = []
    for key, pairs in groups.items():
        criterion = specs[key]
        metrics = classification_metrics(pairs, criterion.label_space())
        matrix: dict[str, dict[str, int]] = defaultdict(dict)
        for (expected, observed), count in sorted(Counter(pairs).items()):
            matrix[expected][observed] = count
        thresholds = [
            Threshold(metric=m, minimum=minimum, value=metrics.get(m, 0.0), passed=metrics.get(m, 0.0) >= minimum)
            for m, minimum in criterion.suite_thresholds.items()
        ]
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
