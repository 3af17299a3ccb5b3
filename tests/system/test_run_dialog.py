"""A simulated dialog through the installed CLI: a claude-code agent and a simulated user, one key for both."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from coder_eval_dagster.core.simulation import OPENING_REQUEST

from ..support.fake_anthropic import Script, Turn
from .conftest import (
    SystemCli,
    agent_usage,
    anthropic_environment,
    carried,
    claude_code_task,
    new_key,
    no_key_anywhere,
    replay_task_file,
)

pytestmark = pytest.mark.slow


def test_a_simulated_dialog_reaches_the_api_is_recorded_and_succeeds(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    key = new_key()
    fake = scripted_anthropic(
        Script(
            [  # exchange 1: a question; exchange 2: the file, then a report
                Turn(text="What should out.txt say?", input_tokens=300, output_tokens=20),
                Turn(tools=[("Bash", {"command": "echo done > out.txt"})], input_tokens=400, output_tokens=30),
                Turn(text="out.txt says done.", input_tokens=500, output_tokens=10),
            ],
            user_replies=["It should say done.", "Thanks <<<END>>>"],
        )
    )
    simulation = {"enabled": True, "persona": "a product owner", "goal": "out.txt says done", "max_turns": 4}
    task = claude_code_task(tmp_path / "tasks", "dialog", initial_prompt="Please write out.txt", simulation=simulation)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, key))

    assert outcome.code == 0, outcome.output
    assert len(fake.script.simulator_requests()) == 2 and len(fake.script.agent_requests()) == 3
    # the simulated user's own model, never the agent's (claude-test): an A/B of agent models keeps its user
    assert {body["model"] for body in fake.script.simulator_requests()} == {"claude-sonnet-4-6"}
    assert fake.script.paths and all(path.startswith("/v1/messages") for path in fake.script.paths), fake.script.paths
    assert carried(key, fake.script.headers)
    result = run.result("dialog")
    assert result["final_status"] == "SUCCESS", (result["error_message"], result["success_criteria_results"])
    assert (result["simulation"]["total_turns"], result["simulation"]["stop_reason"]) == (2, "stop_token")
    assert [(m["role"], m["text"]) for m in result["dialog"]] == [
        ("user", "Please write out.txt"),
        ("agent", "What should out.txt say?"),
        ("user", "It should say done."),
        ("agent", "out.txt says done."),
        ("user", "Thanks"),
    ]
    tokens_in, tokens_out, cost = agent_usage(result)
    assert (tokens_in, tokens_out) == (1200, 60) and cost > 0
    simulation = result["simulation"]
    assert (simulation["simulator_input_tokens"], simulation["simulator_output_tokens"]) == (100, 20)
    assert simulation["simulator_model"] == "claude-sonnet-4-6"  # as served, as coder_eval records it
    turns = pd.read_parquet(system_cli.runs / "tables" / "dialog_turns")
    agent_turns = turns[turns["role"] == "agent"]
    assert list(zip(agent_turns["input_tokens"], agent_turns["output_tokens"], strict=True)) == [(300, 20), (900, 40)]
    assert (turns["input_tokens"] + turns["output_tokens"] == turns["tokens"]).all()
    no_key_anywhere(key, system_cli.runs, system_cli.home, output=outcome.output)


def test_a_failing_simulated_user_is_counted_and_a_dialog_out_of_agent_turns_says_so(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """simulation.simulator_failures counts the simulated user's calls that failed (it stayed 0); a dialog that ends
    because an exchange spent run_limits.max_turns ends as coder_eval's `agent_max_turns`, max_turns_exhausted."""
    fake = scripted_anthropic(Script([Turn(text="What should it say?")], simulator_status=500))
    simulation = {"enabled": True, "persona": "p", "goal": "g", "max_turns": 4}
    task = claude_code_task(tmp_path / "tasks", "failing", simulation=simulation)
    outcome, run = system_cli.run(
        task, env={**anthropic_environment(fake.url, new_key()), "CLAUDE_CODE_MAX_RETRIES": "0"}
    )
    assert outcome.code == 1, outcome.output
    simulated = run.result("failing")["simulation"]
    assert (simulated["stop_reason"], simulated["simulator_failures"]) == ("error", 1), simulated

    fake = scripted_anthropic(
        Script([Turn(tools=[("Bash", {"command": f"echo {i} >> out.txt"})]) for i in range(3)], user_replies=["more"])
    )
    second = SystemCli(tmp_path / "second")  # its own instance and runs folder
    task = claude_code_task(second.folder / "tasks", "spent", simulation=simulation, run_limits={"max_turns": 2})
    outcome, run = second.run(task, env=anthropic_environment(fake.url, new_key()))
    result = run.result("spent")
    assert result["simulation"]["stop_reason"] == "agent_max_turns", (result["simulation"], outcome.output)
    assert result["max_turns_exhausted"] is True


def test_run_limits_max_turns_caps_each_exchange_of_a_dialog(system_cli: SystemCli) -> None:
    """The guide's max_turns caps the agent's turns per iteration, an exchange of a dialog, as coder_eval has it:
    three exchanges of two turns under max_turns 3 all ran (the turns were counted across the dialog, and it ended
    after the second as max_turns_exhausted); an exchange of three turns under 2 ends it as agent_max_turns."""
    two = [{"calls": [{"tool": "Bash", "command": "echo $RANDOM >> log.txt"}]}, {"text": "done"}]
    turns = [*two, {"user": "again"}, *two, {"user": "once more"}, *two]
    simulation = {"enabled": True, "persona": "p", "goal": "g", "max_turns": 3}
    check = [{"type": "run_command", "command": "test $(wc -l < log.txt) -ge 1", "description": "logged"}]
    folder = system_cli.folder / "tasks"
    replay_task_file(folder, "three", turns, simulation=simulation, run_limits={"max_turns": 3}, success_criteria=check)
    long = [{"calls": [{"tool": "Bash", "command": f"echo {i} >> log.txt"}]} for i in range(3)]
    replay_task_file(
        folder,
        "long",
        [*two, {"user": "go"}, *long],
        simulation=simulation,
        run_limits={"max_turns": 2},
        success_criteria=check,
    )
    outcome = system_cli("run", folder, "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 0, outcome.output
    results = {
        path.parent.parent.name: json.loads(path.read_text())
        for path in system_cli.runs.glob("*T*/default/*/00/task.json")
    }
    three, long_one = results["three"], results["long"]
    assert (three["simulation"]["stop_reason"], three["simulation"]["total_turns"]) == ("max_turns", 3)
    assert three["max_turns_exhausted"] is False and three["final_status"] == "SUCCESS"
    assert long_one["simulation"]["stop_reason"] == "agent_max_turns", long_one["simulation"]
    assert long_one["max_turns_exhausted"] is True


def test_a_dialog_without_a_prompt_is_opened_by_the_simulated_user_before_the_agent_starts(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """coder_eval's pure simulation: no initial_prompt, the simulated user writes turn 1 (its tokens counted)."""
    fake = scripted_anthropic(
        Script(
            [Turn(tools=[("Bash", {"command": "echo done > out.txt"})]), Turn(text="out.txt says done.")],
            user_replies=["Hi, could you write out.txt saying done?", "Thanks <<<END>>>"],
        )
    )
    simulation = {"enabled": True, "persona": "a product owner", "goal": "out.txt says done", "max_turns": 4}
    task = claude_code_task(tmp_path / "tasks", "opened", initial_prompt=None, simulation=simulation)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code == 0, outcome.output
    opening_request, _ = fake.script.simulator_requests()
    assert opening_request["messages"] == [{"role": "user", "content": OPENING_REQUEST}]
    assert "could you write out.txt" in json.dumps(fake.script.agent_requests()[0]["messages"])
    result = run.result("opened")
    assert result["final_status"] == "SUCCESS", (result["error_message"], result["success_criteria_results"])
    assert [(m["role"], m["text"]) for m in result["dialog"]][:2] == [
        ("user", "Hi, could you write out.txt saying done?"),
        ("agent", "out.txt says done."),
    ]
    simulated = result["simulation"]
    assert (simulated["simulator_input_tokens"], simulated["simulator_output_tokens"]) == (100, 20)


def test_a_simulated_user_that_cannot_open_the_dialog_ends_it_as_error_before_the_agent_starts(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    fake = scripted_anthropic(Script([Turn(text="never asked")], simulator_status=500))
    simulation = {"enabled": True, "persona": "p", "goal": "g"}
    task = claude_code_task(tmp_path / "tasks", "unopened", initial_prompt=None, simulation=simulation)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code != 0 and not fake.script.agent_requests(), outcome.output
    result = run.result("unopened")
    assert result["final_status"] == "ERROR"
    assert "the simulated user could not open the dialog" in result["error_message"], result["error_message"]
    assert (result["simulation"]["stop_reason"], result["simulation"]["simulator_failures"]) == ("error", 1)


def test_validate_refuses_a_blank_persona_or_goal(tmp_path: Path, system_cli: SystemCli) -> None:
    """A blank persona or goal (a template's empty `${...}`) was accepted: the simulated user had no one to be."""
    simulation = {"enabled": True, "persona": "  ", "goal": "out.txt says done"}
    task = claude_code_task(tmp_path / "tasks", "blank", simulation=simulation)
    outcome = system_cli.invalid(task)
    line = next(n for n, text in enumerate(task.read_text().splitlines(), 1) if "persona:" in text)
    assert f"{task}:{line}: simulation.persona: must not be blank" in outcome.err, outcome.err


def test_validate_refuses_a_task_whose_every_criterion_has_weight_0(tmp_path: Path, system_cli: SystemCli) -> None:
    task = claude_code_task(
        tmp_path / "tasks",
        "informational",
        success_criteria=[
            {"type": "file_exists", "path": "out.txt", "description": "out.txt exists", "weight": 0},
            {"type": "run_command", "command": "false", "description": "fails", "weight": 0},
        ],
    )
    outcome = system_cli.invalid(task)
    line = next(n for n, text in enumerate(task.read_text().splitlines(), 1) if text.startswith("success_criteria:"))
    expected = f"{task}:{line}: success_criteria: every criterion has weight 0: nothing decides the task's success"
    assert expected in outcome.err, outcome.err


def test_a_replayed_dialog_stops_on_criteria_pass_only_when_the_trajectory_criteria_pass_too(
    system_cli: SystemCli,
) -> None:
    """f1.txt exists after exchange 1, the f3 step runs in exchange 3: the dialog ends there, as a success."""
    turns = [
        {"calls": [{"tool": "Bash", "command": "echo 1 > f1.txt"}], "text": "reply 1"},
        {"user": "user 2"},
        {"calls": [{"tool": "Bash", "command": "echo 2 > f2.txt"}], "text": "reply 2"},
        {"user": "user 3"},
        {"calls": [{"tool": "Bash", "command": "echo 3 > f3.txt"}], "text": "reply 3"},
    ]
    simulation = {"enabled": True, "persona": "p", "goal": "g", "max_turns": 5}
    criteria = [
        {"type": "file_exists", "path": "f1.txt", "description": "f1 written"},
        {"type": "command_executed", "tool_name": "Bash", "command_pattern": "f3", "description": "ran the f3 step"},
    ]
    task = replay_task_file(
        system_cli.folder / "tasks",
        "partial",
        turns,
        simulation={**simulation, "stop_on_criteria_pass": True, "check_criteria": "every_turn"},
        success_criteria=criteria,
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    result = run.result("partial")
    assert result["final_status"] == "SUCCESS", result["success_criteria_results"]
    assert (result["simulation"]["total_turns"], result["simulation"]["stop_reason"]) == (3, "criteria_passed")
    assert [m["criteria_passed"] for m in result["dialog"] if m["role"] == "agent"] == [False, False, True]


def test_an_agent_that_fails_in_an_exchange_leaves_no_made_up_reply(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """Exchange 2's model call fails: the dialog ends in error, and no "(the assistant replied with no text)" reply
    is recorded for it, in task.json or the dialog_turns table."""
    fake = scripted_anthropic(
        Script(
            [Turn(text="What should out.txt say?"), Turn(text="never")],
            user_replies=["It should say done."],
            fail_from_turn=1,
            fail_status=400,
        )
    )
    simulation = {"enabled": True, "persona": "a product owner", "goal": "out.txt says done", "max_turns": 4}
    task = claude_code_task(tmp_path / "tasks", "dialog", initial_prompt="Please write out.txt", simulation=simulation)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    result = run.result("dialog")
    assert result["final_status"] == "ERROR" and result["simulation"]["stop_reason"] == "error", outcome.output
    assert [(m["role"], m["text"]) for m in result["dialog"]] == [
        ("user", "Please write out.txt"),
        ("agent", "What should out.txt say?"),
        ("user", "It should say done."),
    ]


# A dialog of up to five exchanges, checked after each, that ends once every criterion passes.
UNTIL_PASSED = {
    "enabled": True,
    "persona": "p",
    "goal": "g",
    "max_turns": 5,
    "check_criteria": "every_turn",
    "stop_on_criteria_pass": True,
}


def test_every_turn_judges_the_last_exchange_once(system_cli: SystemCli, scripted_anthropic) -> None:
    """Under check_criteria: every_turn the judge that passed the exchange the dialog stopped on was asked again
    after the dialog, and its new answer failed the task: stopped as `criteria_passed`, scored FAILURE. coder_eval
    judges that exchange once (`both` is the mode that judges again at the end)."""
    fake = scripted_anthropic(Script([], verdicts=[{"score": score, "rationale": "r"} for score in (0.3, 0.9, 0.2)]))
    turns = [{"text": "reply one"}, {"user": "u2"}, {"text": "reply two"}, {"user": "u3"}, {"text": "reply three"}]
    judge = {"type": "llm_judge", "description": "judged", "prompt": "Grade the dialog.", "include_dialog": True}
    task = replay_task_file(
        system_cli.folder / "tasks", "judged", turns, simulation=UNTIL_PASSED, success_criteria=[judge]
    )
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    result = run.result("judged")
    assert (result["simulation"]["stop_reason"], result["final_status"]) == ("criteria_passed", "SUCCESS"), (
        outcome.output
    )
    assert fake.script.judged == 2
    (criterion,) = result["success_criteria_results"]
    assert criterion["score"] == 0.9 and criterion["evidence"]["reused"] is True


def test_an_exchange_ended_at_its_cap_is_checked_before_the_cap_ends_the_dialog(system_cli: SystemCli) -> None:
    """A replayed (or codex, opencode) agent stopping itself at run_limits.max_turns skipped the per-turn check:
    the exchange that met the criteria ended as agent_max_turns, where the guide's order (and claude-code) says
    criteria_passed."""
    turns = [
        {"text": "reply one"},
        {"user": "write a.txt"},
        {"calls": [{"tool": "Bash", "command": "echo a > a.txt"}]},
        *[{"calls": [{"tool": "Bash", "command": f"echo {n}"}]} for n in range(3)],
    ]
    check = [{"type": "file_exists", "path": "a.txt", "description": "a.txt written"}]
    task = replay_task_file(
        system_cli.folder / "tasks",
        "capped",
        turns,
        simulation=UNTIL_PASSED,
        run_limits={"max_turns": 2},
        success_criteria=check,
    )
    outcome, run = system_cli.run(task, env={})
    result = run.result("capped")
    assert result["simulation"]["stop_reason"] == "criteria_passed", (result["simulation"], outcome.output)
    assert result["simulation"]["total_turns"] == 2 and result["final_status"] == "SUCCESS"
