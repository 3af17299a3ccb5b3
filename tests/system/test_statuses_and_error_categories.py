"""Statuses and error categories as coder_eval files them: a failure after spending run_limits.max_turns is
MAX_TURNS_EXHAUSTED (the contract's "newer values where a feature produces them"), among the failed; an evaluation
that ended before its verdict names its error_category."""

from __future__ import annotations

import pytest

from .conftest import SystemCli, replay_task_file

pytestmark = pytest.mark.slow


def test_a_failure_after_the_last_allowed_turn_is_max_turns_exhausted(system_cli: SystemCli) -> None:
    turns = [{"calls": [{"tool": "Bash", "command": f"echo {i} >> log.txt"}]} for i in range(4)]
    out_file = [{"type": "file_exists", "path": "out.txt", "description": "out.txt exists"}]
    folder = system_cli.folder / "tasks"
    replay_task_file(folder, "spent", turns, run_limits={"max_turns": 2}, success_criteria=out_file)
    log = [{"type": "file_exists", "path": "log.txt", "description": "log.txt exists"}]
    replay_task_file(folder, "passed", turns, run_limits={"max_turns": 2}, success_criteria=log)
    replay_task_file(folder, "failed", turns, success_criteria=out_file)

    outcome, run = system_cli.run(folder, env={})

    assert outcome.code == 1, outcome.output
    statuses = {row["task_id"]: row["status"] for row in run.summary["task_results"]}
    assert statuses == {"spent": "MAX_TURNS_EXHAUSTED", "passed": "SUCCESS", "failed": "FAILURE"}
    spent = run.result("spent")
    assert (spent["final_status"], spent["max_turns_exhausted"]) == ("MAX_TURNS_EXHAUSTED", True)
    assert run.result("passed")["max_turns_exhausted"] is True  # spent its turns, and passed all the same
    assert (run.summary["tasks_succeeded"], run.summary["tasks_failed"], run.summary["tasks_error"]) == (1, 2, 0)


def test_an_evaluation_that_ended_before_its_verdict_names_coder_evals_error_category(system_cli: SystemCli) -> None:
    """task.json's error_details and the row's error_category, as coder_eval files them: where it stopped, and
    why (its dashboards filter on them); none for an evaluation that reached its verdict."""
    folder = system_cli.folder / "tasks"
    turns = [{"usage": {"input_tokens": 900, "output_tokens": 200}, "calls": [{"tool": "Bash", "command": "true"}]}] * 3
    log = [{"type": "file_exists", "path": "log.txt", "description": "log.txt exists"}]
    replay_task_file(folder, "budget", turns, run_limits={"max_total_tokens": 1500}, success_criteria=log)
    replay_task_file(folder, "hook", turns, pre_run=[{"command": "exit 3"}], success_criteria=log)
    replay_task_file(folder, "verdict", turns, success_criteria=log)

    outcome, run = system_cli.run(folder, env={})

    rows = {row["task_id"]: row for row in run.summary["task_results"]}
    categories = {task_id: (row["status"], row["error_category"]) for task_id, row in rows.items()}
    assert categories == {
        "budget": ("TOKEN_BUDGET_EXCEEDED", "budget_exceeded"),
        "hook": ("ERROR", "sandbox_setup_error"),
        "verdict": ("FAILURE", None),
    }, outcome.output
    assert run.result("hook")["error_details"] == {"error_category": "sandbox_setup_error", "component": "sandbox"}
    assert run.result("verdict")["error_details"] is None
    # the agent never started: coder_eval records no iteration and no command figures
    hook = run.result("hook")
    assert (hook["iteration_count"], hook["iterations"], hook["command_stats"]) == (0, [], None)
    assert rows["hook"]["actual_commands"] is None and rows["verdict"]["actual_commands"] == 3


def test_a_run_cut_short_has_no_final_reply_whatever_an_earlier_turn_said(system_cli: SystemCli) -> None:
    """An earlier turn's words ("Let me check the logs first.") were taken for the final reply of a run a time limit
    cut: has_final_reply true, a visible turn too many, and the expected_turns warning counting it."""
    turns = [
        {"calls": [{"tool": "Bash", "command": "echo one"}], "text": "Let me check the logs first."},
        {"calls": [{"tool": "Bash", "command": "sleep 30"}], "text": "All done."},
    ]
    check = [{"type": "run_command", "command": "true", "description": "ran"}]
    limits = {"turn_timeout": 10, "expected_turns": 1}
    task = replay_task_file(system_cli.folder / "tasks", "cut", turns, run_limits=limits, success_criteria=check)
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 1, outcome.output
    (row,) = run.summary["task_results"]
    assert (row["status"], row["has_final_reply"], row["visible_turns"]) == ("TIMEOUT", False, 2)
