"""Suite metric formulas and the task report's markers."""

from __future__ import annotations

import pytest

from coder_eval_dagster.core.reports.task_html import render_task_html
from coder_eval_dagster.core.results import CriterionResult, EvaluationResult
from coder_eval_dagster.core.suite import classification_metrics


def test_metrics_match_hand_computed_values() -> None:
    pairs = [("a", "a"), ("a", "b"), ("b", "b"), ("b", "b"), ("c", "(other)"), ("a", "a")]
    metrics = classification_metrics(pairs, ["a", "b", "c"])
    assert metrics["accuracy"] == pytest.approx(4 / 6, abs=1e-6)
    assert metrics["precision.a"] == 1.0 and metrics["recall.a"] == pytest.approx(2 / 3, abs=1e-6)
    assert metrics["precision.b"] == pytest.approx(2 / 3, abs=1e-6) and metrics["recall.b"] == 1.0
    assert metrics["f1.c"] == 0.0 and metrics["precision.(other)"] == 0.0
    f1_a, f1_b = 0.8, 0.8
    assert metrics["macro_f1"] == pytest.approx((f1_a + f1_b + 0 + 0) / 4, abs=1e-6)  # labels seen: a, b, c, (other)
    assert metrics["weighted_f1"] == pytest.approx((f1_a * 3 + f1_b * 2 + 0) / 6, abs=1e-6)
    assert metrics["micro_f1"] == metrics["accuracy"]


def test_labels_never_seen_still_get_per_label_metrics() -> None:
    metrics = classification_metrics([("yes", "yes")], ["yes", "no"])
    assert metrics["recall.no"] == 0.0 and metrics["macro_f1"] == 1.0


def test_task_html_marks_informational_and_advisory_criteria() -> None:
    common = {"type": "file_exists", "score": 0.0, "passed": False, "pass_threshold": 0.9}
    result = EvaluationResult(
        run_id="r",
        task_id="t",
        base_task_id="t",
        variant_id="default",
        replicate=1,
        agent_type="none",
        final_status="SUCCESS",
        success=True,
        weighted_score=1.0,
        stopped_early=True,
        early_stop_reason="decision_budget_exceeded",
        criteria=[
            CriterionResult(
                index=0, description="main <check>", gating=True, weight=1, **{**common, "score": 1.0, "passed": True}
            ),
            CriterionResult(index=1, description="info", gating=False, weight=0, **common),
            CriterionResult(index=2, description="cut", gating=True, weight=1, advisory=True, **common),
        ],
    )
    page = render_task_html(result)
    assert "informational — not gated" in page and "advisory — not gated" in page
    assert "stopped early (decision_budget_exceeded)" in page and "1/1 gating criteria passed" in page
    assert "main &lt;check&gt;" in page and "<script" not in page and "http" not in page.split("<body>")[1]
