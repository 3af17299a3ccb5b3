"""Suite metric formulas and the task report's markers."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from coder_eval_dagster.core.layout import evaluation_files
from coder_eval_dagster.core.models.results import CriterionResult, EvaluationResult
from coder_eval_dagster.core.reports.task_html import render_task_html
from coder_eval_dagster.core.suite import classification_metrics

from ..support.helpers import run_cli, write_task


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


def test_evaluation_files_are_the_evaluations_own_never_a_sandboxs(tmp_path: Path) -> None:
    run = tmp_path / "run"
    evaluations = ["default/t/01", "default/t/02", "v2/d/row-1/01", "v2/d/sandbox/01"]  # a row may be named sandbox
    for folder in evaluations:
        (run / folder / "sandbox" / "deep").mkdir(parents=True)
        for where in ("", "sandbox", "sandbox/deep"):
            (run / folder / where / "task.json").write_text("{}", encoding="utf-8")
    assert evaluation_files(run, "task.json") == sorted(run / folder / "task.json" for folder in evaluations)
    assert evaluation_files(run, "run_state.json") == [] and evaluation_files(tmp_path / "none", "task.json") == []


def test_a_sandbox_file_named_task_json_leaves_the_summary_alone(tmp_path: Path) -> None:
    task = {
        "task_id": "own-json",
        "description": "the sandbox holds a task.json of its own",
        "agent": {"type": "none"},
        "sandbox": {"python": None},
        "pre_run": [{"command": 'echo \'{"name": "build"}\' > task.json'}],
        "success_criteria": [{"type": "file_exists", "path": "task.json", "description": "it is there"}],
    }
    result = run_cli("run", write_task(tmp_path / "tasks", task), "--runs-dir", tmp_path / "runs")
    assert result.code == 0, result.err
    run_file = tmp_path / "runs" / "latest" / "run.json"
    assert [t["task_id"] for t in json.loads(run_file.read_text(encoding="utf-8"))["task_results"]] == ["own-json"]


def _spread_task(folder: Path, passing: int, rows: int, minimum: float) -> Path:
    """A dataset task whose first ``passing`` of ``rows`` rows pass, gated on the std of its scores."""
    task = {
        "task_id": "spread",
        "description": "rows that pass or not",
        "agent": {"type": "none"},
        "sandbox": {"python": None},
        "dataset": {"rows": [{"id": f"r{index}", "ok": "yes" if index < passing else "no"} for index in range(rows)]},
        "success_criteria": [
            {
                "type": "run_command",
                "command": 'test "${row.ok}" = yes',
                "description": "scores 1 or 0, and passes either way",
                "pass_threshold": 0,
                "suite_thresholds": {"std": minimum},
            },
        ],
    }
    return write_task(folder / "tasks", task)


def test_a_threshold_met_at_its_minimum_keeps_a_value_not_below_it(tmp_path: Path) -> None:
    """std of 6 passes in 9 rows is sqrt(2/9), 0.4714045207910317; as its own minimum it is met, and its value kept
    to 12 places (0.471404520791) read below the minimum beside `passed: true`."""
    import statistics

    minimum = statistics.pstdev([1.0] * 6 + [0.0] * 3)
    result = run_cli("run", _spread_task(tmp_path, 6, 9, minimum), "--runs-dir", tmp_path / "runs")
    assert result.code == 0, result.err + result.out
    summary = json.loads((tmp_path / "runs" / "latest" / "run.json").read_text(encoding="utf-8"))
    ((threshold,),) = [entry["thresholds"] for entry in summary["suite"]]
    assert threshold["passed"] and threshold["value"] >= threshold["minimum"]


@pytest.mark.parametrize(("minimum", "code"), [(0.48989799, 1), (0.48989794, 0)], ids=["just_above", "just_below"])
def test_a_suite_threshold_is_judged_on_the_metric_s_exact_value(tmp_path: Path, minimum: float, code: int) -> None:
    """std of 4 passes in 10 rows is 0.4898979486: a minimum 4e-8 above it fails the run (rounded to 6 places
    first, it passed), one below passes; run.json keeps the value to the 12 places it is judged at."""
    result = run_cli("run", _spread_task(tmp_path, 4, 10, minimum), "--runs-dir", tmp_path / "runs")
    assert result.code == code, result.err + result.out
    summary = json.loads((tmp_path / "runs" / "latest" / "run.json").read_text(encoding="utf-8"))
    ((threshold,),) = [entry["thresholds"] for entry in summary["suite"]]
    assert (threshold["value"], threshold["passed"]) == (0.489897948557, code == 0)
    assert (threshold["value"] >= threshold["minimum"]) == threshold["passed"]
    table = pd.read_parquet(tmp_path / "runs/tables/suite_metrics")
    (gated,) = table[table["minimum"].notna()].itertuples()  # as an analyst reads the table
    assert (gated.value, gated.passed, gated.value >= gated.minimum) == (0.489897948557, code == 0, code == 0)
    # the figures shown say the verdict: 0.490 (or 0.489898) >= 0.48989799 would read as met
    line = "std 0.4898979 >= 0.48989799: NOT met" if code else "std 0.49 >= 0.48989794: met"
    assert line in (tmp_path / "runs" / "latest" / "run.md").read_text(encoding="utf-8")
    assert line.replace(": ", " ") in result.out.replace(":", "")
