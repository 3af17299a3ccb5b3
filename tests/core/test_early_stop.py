"""The early-stop watcher, rule by rule, through replayed trajectories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from coder_eval_dagster.core.models.report import RunSummary, TaskRow
from coder_eval_dagster.core.models.results import EvaluationResult
from coder_eval_dagster.core.reports.run_summary import render_run_md
from coder_eval_dagster.core.reports.task_html import render_task_html
from coder_eval_dagster.core.resolution import resolve
from coder_eval_dagster.core.run_spec import RunSpec

from ..support.helpers import criterion, evaluate_replay, write

SKILL_CALL = {"tool": "Skill", "skill": "plugin:date-teller"}
OTHER_SKILL = {"tool": "Skill", "skill": "weather"}


def bash(command: str) -> dict[str, Any]:
    return {"tool": "Bash", "command": command}


def skill(expected: str, block: dict | None = None, **extra) -> dict[str, Any]:
    spec = criterion("skill_triggered", skill_name="date-teller", expected_skill=expected, **extra)
    return {**spec, "stop_early": block} if block is not None else spec


def run(tmp_path: Path, calls: list[dict], criteria: list[dict], **task) -> EvaluationResult:
    """One call per turn, then a final reply."""
    turns = [{"calls": [c]} for c in calls] + [{"calls": [], "text": "done"}]
    return evaluate_replay(tmp_path, turns, success_criteria=criteria, **{"run_limits": {"max_turns": 30}, **task})


def steps(result: EvaluationResult) -> int:
    return sum(len(t.calls) for t in result.trajectory)


def test_no_block_means_no_watcher(tmp_path):
    result = run(tmp_path, [bash("ls"), SKILL_CALL], [skill("")])
    assert not result.stopped_early and steps(result) == 2 and result.final_status == "FAILURE"


def test_distractor_misfire_fail_stops(tmp_path):
    report = criterion("file_exists", path="report.md")
    result = run(tmp_path, [bash("ls"), SKILL_CALL, bash("touch report.md"), bash("ls")], [skill("", {}), report])
    assert result.stopped_early and result.early_stop_reason == "criterion_failed"
    assert steps(result) == 2 and result.final_status == "FAILURE"
    assert result.turns_remaining_at_stop == 28
    assert result.early_stop is not None and result.early_stop.sdk_turn_index == 2  # coder_eval's: 30 - 28, a count
    unarmed = result.criteria[1]
    assert unarmed.advisory and not unarmed.passed  # never had the chance: advisory, not gating


def test_kill_switch_disarms(tmp_path):
    result = run(tmp_path, [bash("ls"), SKILL_CALL, bash("ls")], [skill("", {})], run_limits={"stop_early": False})
    assert not result.stopped_early and steps(result) == 3


def test_decide_within_timeout(tmp_path):
    result = run(tmp_path, [bash("a"), bash("b"), bash("c"), SKILL_CALL], [skill("date-teller", {"decide_within": 3})])
    assert result.stopped_early and result.early_stop_reason == "decision_budget_exceeded" and steps(result) == 3
    assert result.final_status == "FAILURE"


def test_deciding_on_the_last_allowed_step_is_not_penalized(tmp_path):
    report = criterion("file_exists", path="report.md")
    result = run(
        tmp_path,
        [bash("a"), bash("b"), SKILL_CALL, bash("touch report.md")],
        [skill("date-teller", {"decide_within": 3}), report],
    )
    assert not result.stopped_early and steps(result) == 4  # a live pass only latches (on_pass: continue)
    assert result.final_status == "SUCCESS" and not any(c.advisory for c in result.criteria)


def test_on_pass_stop_banks_the_saved_turns(tmp_path):
    report = criterion("file_exists", path="report.md")
    result = run(
        tmp_path, [bash("a"), SKILL_CALL, bash("touch report.md")], [skill("date-teller", {"on_pass": "stop"}), report]
    )
    assert result.stopped_early and result.early_stop_reason == "criterion_passed" and steps(result) == 2
    assert result.final_status == "SUCCESS"  # gated on the armed subset; report.md is advisory
    assert result.criteria[1].advisory and not result.criteria[1].passed
    assert result.weighted_score == 0.5  # computed regardless (the guide), the advisory criterion's 0 included


def test_fail_stop_deferred_while_a_positive_is_undecided(tmp_path):
    distractor = {**criterion("skill_triggered", skill_name="weather", expected_skill=""), "stop_early": {}}
    positive = skill("date-teller", {})
    result = run(tmp_path, [OTHER_SKILL, bash("a"), SKILL_CALL, bash("b")], [distractor, positive])
    assert result.stopped_early and steps(result) == 3  # the misfire at step 1 waits for the positive at step 3
    assert result.early_stop_reason == "criterion_failed"
    assert [c.passed for c in result.criteria] == [False, True]  # the true positive was not frozen as a miss


def test_pass_stop_deferred_while_a_sibling_is_undecided(tmp_path):
    stopper = skill("date-teller", {"on_pass": "stop"})
    sibling = {**criterion("command_executed", command_pattern="pytest"), "stop_early": {}}
    result = run(tmp_path, [SKILL_CALL, bash("ls"), bash("pytest -q"), bash("ls")], [stopper, sibling])
    assert result.stopped_early and steps(result) == 3 and result.final_status == "SUCCESS"


def test_weighted_ceiling_absorbs_a_low_weight_failure(tmp_path):
    minor = {
        **criterion("command_executed", command_pattern="rm -rf", min_count=0, max_count=0, weight=1),
        "stop_early": {},
    }
    major = {**criterion("command_executed", command_pattern="pytest", weight=3), "stop_early": {}}
    calls = [bash("rm -rf build"), bash("pytest"), bash("ls")]
    absorbed = run(tmp_path, calls, [minor, major], run_limits={"max_turns": 30, "stop_early_gate_threshold": 0.7})
    assert not absorbed.stopped_early and steps(absorbed) == 3  # ceiling 0.75 >= 0.7
    strict = run(tmp_path / "b", calls, [minor, major])
    assert strict.stopped_early and strict.final_status == "FAILURE"


def test_must_not_run_guard_stops_at_once(tmp_path):
    guard = {**criterion("command_executed", command_pattern="git push", min_count=0, max_count=0), "stop_early": {}}
    result = run(tmp_path, [bash("ls"), bash("bash -lc 'git \"push\"'"), bash("ls")], [guard])
    assert result.stopped_early and steps(result) == 2 and result.final_status == "FAILURE"


def test_inert_triggers_on_a_distractor(tmp_path):
    quiet = skill("", {"on_pass": "stop", "decide_within": 1})
    result = run(tmp_path, [bash("a"), bash("b"), bash("c")], [quiet])
    assert not result.stopped_early and result.final_status == "SUCCESS"


def test_fired_on_the_final_call_still_gates_armed_only(tmp_path):
    report = criterion("file_exists", path="never.md")
    result = run(tmp_path, [bash("a"), SKILL_CALL], [skill("date-teller", {"on_pass": "stop"}), report])
    assert result.stopped_early and result.final_status == "SUCCESS" and result.criteria[1].advisory


def test_watcher_bug_fails_open(tmp_path, monkeypatch):
    from coder_eval_dagster.core.criteria.skill_triggered import SkillTriggered

    def broken(criterion, hits):
        raise RuntimeError("bug")

    monkeypatch.setattr(SkillTriggered, "live_verdict", broken)
    result = run(tmp_path, [SKILL_CALL, bash("a"), bash("b")], [skill("", {})])
    assert not result.stopped_early and steps(result) == 3 and result.final_status == "FAILURE"


def test_observability(tmp_path):
    result = run(tmp_path, [SKILL_CALL, bash("a")], [skill("", {}), criterion("file_exists", path="x")])
    page = render_task_html(result)
    assert "stopped early (criterion_failed)" in page and "advisory — not gated" in page
    row = TaskRow.of(result)
    assert (row.stopped_early, row.early_stop_reason, row.turns_remaining_at_stop, row.gate_threshold) == (
        True,
        "criterion_failed",
        29,
        1.0,
    )
    early = result.early_stop
    assert early is not None and (early.reason, early.deciding_criterion_type, early.tool_call_index) == (
        "criterion_failed",
        "skill_triggered",
        1,
    )
    report = RunSummary(run_id="r", start_time="2026-12-01T00:00:00Z", end_time="2026-12-01T00:01:00Z", passed=False)
    report.task_results = [row]
    note = "> **NOTE:** [t] [default] #01 stopped early (criterion_failed); ≤ 29 turn(s) avoided"
    assert note in render_run_md(report)


def test_zero_gate_threshold_is_rejected_on_an_armed_task(tmp_path):
    path = write(
        tmp_path / "task.yaml",
        yaml.safe_dump(
            {
                "task_id": "t",
                "description": "d",
                "initial_prompt": "p",
                "run_limits": {"stop_early_gate_threshold": 0.0},
                "success_criteria": [skill("", {})],
            }
        ),
    )
    problems = resolve(RunSpec(task_paths=[str(path)])).problems
    assert [p.field for p in problems] == ["run_limits.stop_early_gate_threshold"]
