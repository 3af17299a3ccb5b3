"""Each evaluation's run-time notes (its warnings among them) and the run's verdict, in every report a reader or CI
sees: run.md, task.html, the run viewer and JUnit (the installed CLI's run: tests/system/test_report_notes.py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from coder_eval_dagster.core.models.report import RunSummary, TaskRow
from coder_eval_dagster.core.models.results import CriterionResult, EvaluationResult
from coder_eval_dagster.core.reports.junit import junit_xml
from coder_eval_dagster.core.reports.run_summary import render_run_md
from coder_eval_dagster.core.reports.run_viewer import FIELDS, render_run_viewer, viewer_data
from coder_eval_dagster.core.reports.task_html import render_task_html

CUT = "run_limits.max_tool_calls (2) reached: the agent was stopped there"
HOSTILE = "the simulated user failed: <script>alert(1)</script> | [x](http://evil)\nsecond line"


def evaluation(task_id: str = "cut", success: bool = True, **fields: Any) -> EvaluationResult:
    criterion: dict[str, Any] = {
        "index": 0,
        "type": "file_exists",
        "description": "a.txt exists",
        "gating": True,
        "weight": 1.0,
    }
    passed = CriterionResult(**criterion, pass_threshold=1.0, score=1.0 if success else 0.0, passed=success)
    values: dict[str, Any] = {"run_id": "r", "task_id": task_id, "base_task_id": task_id, "variant_id": "default"}
    values |= {"replicate": 0, "agent_type": "replay", "criteria": [passed]}
    values |= {"final_status": "SUCCESS" if success else "FAILURE", "success": success, "weighted_score": 1.0}
    return EvaluationResult(**(values | fields))


def summary(*results: EvaluationResult, **fields: Any) -> RunSummary:
    passed = all(result.success for result in results)
    values: dict[str, Any] = {"run_id": "r", "start_time": "2026-12-01T00:00:00Z", "end_time": "2026-12-01T00:01:00Z"}
    return RunSummary(**values, passed=passed, task_results=[TaskRow.of(r) for r in results], **fields)


def noted() -> EvaluationResult:
    """A SUCCESS cut off at max_tool_calls, over its expected turns, with a warning carrying outside text."""
    return evaluation(warnings=[CUT, HOSTILE], visible_turns=5, expected_turns=1, max_turns_exhausted=True)


def test_run_md_has_coder_evals_run_time_notes_with_every_warning_escaped_on_one_line() -> None:
    text = render_run_md(summary(noted(), evaluation("quiet")))
    notes = text.split("## Run-time Notes\n", 1)[1].split("\n## ", 1)[0]
    assert [line for line in notes.splitlines() if line] == [
        "> **WARNING:** [cut] [default] #00 max_turns exhausted",
        "> **WARNING:** [cut] [default] #00 expected_turns exceeded: 5/1 (visible turns)",
        f"> **WARNING:** [cut] [default] #00 {CUT}",
        "> **WARNING:** [cut] [default] #00 the simulated user failed: &lt;script&gt;alert(1)&lt;/script&gt; \\| "
        "\\[x\\](http://evil) second line",
    ]
    assert "## Run-time Notes" not in render_run_md(summary(evaluation("quiet")))  # only when there are notes


def test_task_html_lists_the_warnings_escaped() -> None:
    page = render_task_html(noted())
    assert f"<li><strong>WARNING</strong>: {CUT}</li>" in page and "2 warning(s)" in page
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Run-time notes" not in render_task_html(evaluation("quiet"))


def test_task_html_badges_only_turns_over_the_expected_ones_not_a_failure_within_them() -> None:
    over = evaluation(expected_turns=4, visible_turns=5, within_expected_turns=True)  # within 1.5x, but over
    failed_within = evaluation(success=False, expected_turns=10, visible_turns=3, within_expected_turns=False)
    page = render_task_html(over)
    assert "over expected turns" in page and "expected_turns exceeded: 5/4" in page  # the badge as its note
    assert "over expected turns" not in render_task_html(failed_within)


def test_the_viewer_row_carries_its_notes_and_the_page_the_verdict() -> None:
    data = viewer_data("r", [noted(), evaluation("quiet")], ["default"])
    notes = [[data["strings"][i] for i in row[FIELDS.index("notes")]] for row in data["rows"]]
    assert notes[0][2] == f"WARNING: {CUT}" and len(notes[0]) == 4 and notes[1] == []
    page = render_run_viewer("r", [noted()], ["default"], report=summary(noted()))
    assert '<p id="verdict" class="verdict PASSED">PASSED: 1 of 1 evaluations passed</p>' in page
    assert 'id="verdict"' not in render_run_viewer("r", [noted()], ["default"])  # no run.json yet: no verdict


def test_junit_shows_the_warnings_as_output_never_as_a_failure() -> None:
    root = ET.fromstring(junit_xml(summary(noted())))
    case = root.find(".//testcase[@name='cut[00]']")
    assert case is not None and case.find("failure") is None and root.get("failures") == "0"
    out = case.findtext("system-out") or ""
    assert f"WARNING: {CUT}" in out.splitlines() and "<script>alert(1)</script>" in out  # XML-escaped by the writer


def test_the_run_wide_budget_fails_the_junit_and_the_viewer_says_why() -> None:
    left = [{"task_id": "cut", "variant_id": "default", "replicate": n, "reason": "budget"} for n in (1, 2)]
    budget = {"max_usd": 0.005, "spent_usd": 0.01, "exhausted": True}
    report = summary(evaluation(), not_run=left, not_run_count=2, budget=budget).model_copy(update={"passed": False})
    root = ET.fromstring(junit_xml(report))
    gate = root.find(".//testcase[@name='run-budget']")
    why = "2 evaluations not run: the run-wide budget was spent ($0.0100 of $0.0050)"
    assert gate is not None and gate.findtext("failure") == why and root.get("failures") == "1"
    page = render_run_viewer("r", [evaluation()], ["default"], report=report)
    assert f'<p id="verdict" class="verdict FAILED">FAILED: {why}</p>' in page
    within = summary(evaluation(), budget=budget | {"spent_usd": 0.001, "exhausted": False})
    case = ET.fromstring(junit_xml(within)).find(".//testcase[@name='run-budget']")
    assert case is not None and case.find("failure") is None  # the budget held: its testcase passes


def test_a_sequential_stop_is_skipped_in_junit_and_noted_in_the_viewer() -> None:
    left = [{"task_id": f"t{n}", "variant_id": "b", "replicate": 0, "reason": "sequential"} for n in range(3)]
    block = {"decision": "b_better", "stopped_at_batch": 2}
    report = summary(evaluation(), not_run=left, not_run_count=3, sequential=block)
    root = ET.fromstring(junit_xml(report))
    case = root.find(".//testcase[@name='sequential-stop']")
    why = "3 evaluations not run: the sequential A/B stopped after batch 2 (b_better)"
    skipped = None if case is None else case.find("skipped")
    assert skipped is not None and skipped.get("message") == why
    assert (root.get("failures"), root.get("skipped")) == ("0", "1")
    page = render_run_viewer("r", [evaluation()], ["default"], report=report)
    assert f"PASSED: 1 of 1 evaluations passed \u00b7 {why}" in page


def test_a_run_failing_on_nothing_the_junit_shows_still_fails_it() -> None:
    """An invalid task file left out fails the run (run.json's ``passed``), with every evaluation green."""
    report = summary(evaluation()).model_copy(update={"passed": False})
    root = ET.fromstring(junit_xml(report))
    case = root.find(".//testcase[@name='run']")
    assert case is not None and "task file" in (case.findtext("failure") or "") and root.get("failures") == "1"
    assert ET.fromstring(junit_xml(summary(evaluation()))).get("failures") == "0"  # a passing run stays green


def test_the_viewer_verdict_names_each_gate_that_failed() -> None:
    threshold = {"metric": "mean", "value": 0.667, "minimum": 0.9, "passed": False}
    suite = [{"base_task_id": "ds", "variant_id": "default", "thresholds": [threshold]}]
    flaky = {"share": 0.4, "max_share": 0.2, "passed": False}
    report = summary(evaluation(), evaluation("bad", success=False), suite=suite, flaky=flaky)
    page = render_run_viewer("r", [evaluation()], ["default"], report=report)
    assert (
        "FAILED: 1 of 2 evaluations did not pass; suite thresholds not met: ds [default] mean 0.667 &lt; 0.9; "
        "flaky rows 40.0% &gt; max_flaky_share 20.0%</p>"
    ) in page


def stopped() -> EvaluationResult:
    """A TIMEOUT whose criterion failed because the agent was stopped, with a weight-0 criterion beside it."""
    informational = CriterionResult(
        index=1, type="run_command", description="style", gating=False, weight=0.0, pass_threshold=1.0, score=0.0
    )
    timed_out = evaluation(
        "slow", success=False, final_status="TIMEOUT", error="run_limits.task_timeout of 30 s reached"
    )
    return timed_out.model_copy(update={"criteria": [*timed_out.criteria, informational]})


def test_every_report_says_a_timeout_timed_out_and_labels_an_informational_criterion() -> None:
    """run.md, the terminal and JUnit said why a TIMEOUT failed; the viewer showed its criterion's score instead.
    JUnit left a weight-0 criterion out where coder_eval lists it as [INFO]."""
    data = viewer_data("r", [stopped()], ["default"])
    (row,) = data["rows"]
    assert data["strings"][row[FIELDS.index("why")]] == "run_limits.task_timeout of 30 s reached"
    failure = ET.fromstring(junit_xml(summary(stopped()))).findtext(".//testcase[@name='slow[00]']/failure") or ""
    assert failure.splitlines()[-1] == "[INFO] run_command: score 0.00 \u2014 style"


def test_an_early_stop_without_max_turns_claims_no_turns_avoided() -> None:
    early = evaluation(stopped_early=True, early_stop_reason="criterion_passed", turns_remaining_at_stop=None)
    assert "> **NOTE:** [cut] [default] #00 stopped early (criterion_passed)\n" in render_run_md(summary(early))
    capped = early.model_copy(update={"turns_remaining_at_stop": 9})
    assert "stopped early (criterion_passed); ≤ 9 turn(s) avoided" in render_run_md(summary(capped))
