"""task.html shows a run_command's stdout match mode whenever it compares stdout (the default ``exact`` too), and
an ERROR that ended before the criteria says so in place of an empty criteria table."""

from __future__ import annotations

from typing import Any

import pytest

from coder_eval_dagster.core.models.results import CriterionResult, EvaluationResult
from coder_eval_dagster.core.reports.task_html import render_task_html


def evaluation(criteria: list[CriterionResult], **fields: Any) -> EvaluationResult:
    return EvaluationResult(
        run_id="r",
        task_id="t",
        base_task_id="t",
        variant_id="default",
        replicate=0,
        agent_type="none",
        criteria=criteria,
        **{"final_status": "FAILURE", **fields},
    )


def run_command(**inputs: Any) -> CriterionResult:
    return CriterionResult(
        index=0,
        type="run_command",
        description="prints 42",
        score=0.0,
        passed=False,
        gating=True,
        weight=1,
        pass_threshold=1,
        inputs=inputs,
    )


def test_the_default_exact_match_is_shown_beside_the_expected_stdout() -> None:
    page = render_task_html(evaluation([run_command(command="echo 41", expected_stdout="42")]))
    assert "<dt>expected_stdout</dt><dd>42</dd><dt>stdout_match</dt><dd>exact</dd>" in page


def test_a_set_match_mode_is_shown_once() -> None:
    page = render_task_html(evaluation([run_command(command="echo 41", expected_stdout="4", stdout_match="contains")]))
    assert page.count("<dt>stdout_match</dt>") == 1 and "<dt>stdout_match</dt><dd>contains</dd>" in page


def test_no_match_mode_where_no_stdout_is_compared() -> None:
    assert "stdout_match" not in render_task_html(evaluation([run_command(command="true")]))


@pytest.mark.parametrize(
    ("error", "component", "stage"),
    [
        ("pre_run command 1 failed (exit code 9): exit 9", "sandbox", "pre_run"),
        ("sandbox setup failed: no space left on device", "sandbox", "sandbox setup"),
        ("Claude Code CLI exited with code 1", "agent", "agent"),
    ],
)
def test_an_error_before_the_criteria_says_they_were_not_checked(error: str, component: str, stage: str) -> None:
    details = {"error_category": "x", "component": component}
    page = render_task_html(evaluation([], final_status="ERROR", error=error, error_details=details))
    assert f"criteria not checked: the evaluation ended as ERROR in {stage}" in page
    assert "<th>description</th>" not in page  # no table of headers with no rows


def test_a_failure_keeps_its_criteria_table() -> None:
    page = render_task_html(evaluation([run_command(command="false")]))
    assert "<th>description</th>" in page and "criteria not checked" not in page
