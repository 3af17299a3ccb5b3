"""A simulated dialog through the installed CLI: a claude-code agent and a simulated user, one key for both."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.fake_anthropic import Script, Turn
from .conftest import SystemCli, agent_usage, anthropic_environment, carried, claude_code_task, new_key, no_key_anywhere

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
    no_key_anywhere(key, system_cli.runs, system_cli.home, output=outcome.output)


def test_a_failing_simulated_user_is_counted_and_a_dialog_out_of_agent_turns_says_so(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """simulation.simulator_failures counts the simulated user's calls that failed (it stayed 0); a dialog that ends
    because the agent spent run_limits.max_turns reports max_turns_exhausted, as a single exchange does."""
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
    assert result["simulation"]["stop_reason"] == "run_limit_exceeded", (result["simulation"], outcome.output)
    assert result["max_turns_exhausted"] is True
