"""claude-code records a run that stops as a replay of the same trajectory records it, through the installed CLI.

CONTRACT.md §5: the replay agent records telemetry "exactly as a real agent would". Three places where claude-code
did not:

- A call its own PreToolUse hook refused because the run was stopping (an early stop, the tool-call cap) never ran,
  yet it was recorded and counted as a command of the trajectory (the criteria matched it, visible_turns and
  actual_commands counted it); a replay never plays it.
- Budgets are checked after each completed turn (docs/task-format.md, the guide: "no mid-turn enforcement"), yet
  claude-code checked them mid-turn on the usage seen so far, and refused the breaching turn's own calls once the
  breach showed (an input cap at the message's start, any cap once an earlier call of the turn had ended).
- A call cut by turn_timeout kept running through the CLI's grace to exit and wrote into the sandbox after the
  deadline, and was recorded with no start and no duration.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_anthropic import FakeAnthropic, Script, Turn

from .conftest import SystemCli, anthropic_environment, claude_code_task, new_key, replay_task_file

BOTH = ["echo 1 >> out.txt", "echo 2 >> out.txt"]  # two calls of one assistant message
CLAUDE_CODE = {"type": "claude-code", "permission_mode": "bypassPermissions"}
REPLAY = {"type": "replay", "trajectory": "replayed.traj.yaml"}
PRICED_MODEL = "acme-coder-1"  # priced by the test's price file: each turn's cost is known as it ends


def command(pattern: str, **fields: Any) -> dict[str, Any]:
    return {
        "type": "command_executed",
        "tool_name": "Bash",
        "command_pattern": pattern,
        "description": pattern,
        **fields,
    }


def commands_of(result: dict[str, Any]) -> list[str]:
    return [call["parameters"]["command"] for iteration in result["iterations"] for call in iteration["commands"]]


def as_recorded(result: dict[str, Any], sandbox: Path) -> dict[str, Any]:
    """What a run's task.json and sandbox say of it: what a replay of the same trajectory must say too."""
    return {
        "final_status": result["final_status"],
        "weighted_score": result["weighted_score"],
        "visible_turns": result["visible_turns"],
        "actual_commands": result["actual_commands"],
        "commands": commands_of(result),
        "statuses": [call["result_status"] for iteration in result["iterations"] for call in iteration["commands"]],
        "out.txt": (sandbox / "out.txt").read_text(),
    }


def run_beside_replay(
    tmp_path: Path,
    system_cli: SystemCli,
    fake: FakeAnthropic,
    turns: list[dict[str, Any]],
    *options: str,
    model: str = "claude-test",
    **task: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The claude-code task (the scripted server plays the trajectory) and a replay of ``turns`` under the same
    ``task`` fields and ``model``, in one run: each one's ``as_recorded``."""
    tasks = tmp_path / "tasks"
    claude_code_task(tasks, "live", agent={**CLAUDE_CODE, "model": model}, **task)
    replay_task_file(tasks, "replayed", turns, agent={**REPLAY, "model": model}, **task)  # priced as the live turns
    outcome, run = system_cli.run(tasks, *options, env=anthropic_environment(fake.url, new_key()))
    recorded = [
        as_recorded(run.result(task_id), run.evaluation(task_id) / "sandbox") for task_id in ("live", "replayed")
    ]
    assert all(record["final_status"] != "ERROR" for record in recorded), (recorded, outcome.output)
    return recorded[0], recorded[1]


def bash_turn(commands: list[str], **usage: int) -> dict[str, Any]:
    return {"calls": [{"tool": "Bash", "command": text} for text in commands], **({"usage": usage} if usage else {})}


STOPS: dict[str, dict[str, Any]] = {
    "early_stop": {
        "run_limits": {"max_turns": 10},
        "success_criteria": [command("echo 1", min_count=0, max_count=0, stop_early={}), command("echo 2")],
    },
    "max_tool_calls": {"run_limits": {"max_turns": 10, "max_tool_calls": 1}, "success_criteria": [command("echo 2")]},
}


@pytest.mark.parametrize("stop", STOPS)
def test_a_call_refused_as_the_run_stops_never_ran_and_is_no_command(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Callable[[Script], FakeAnthropic], stop: str
) -> None:
    """The first call stops the run; the second, in the same message, is refused: it is neither recorded nor counted
    nor matched by a criterion (out.txt holds only 1), as a replay never plays it."""
    fake = scripted_anthropic(Script([Turn(tools=[("Bash", {"command": text}) for text in BOTH]), Turn(text="done")]))
    live, replayed = run_beside_replay(tmp_path, system_cli, fake, [bash_turn(BOTH)], **STOPS[stop])
    assert live["commands"] == ["echo 1 >> out.txt"] and live["out.txt"] == "1\n", live
    assert (live["visible_turns"], live["actual_commands"], live["weighted_score"]) == (1, 1, 0.0), live
    assert live == replayed
    assert len(fake.script.agent_requests()) == 1  # no model request followed the stop


CAPS: dict[
    str, tuple[dict[str, float], str]
] = {  # each cap, passed by the first turn's usage only: 2,000 input tokens, 500 output, ~$0.0135
    "max_input_tokens": ({"max_input_tokens": 1000}, "TOKEN_BUDGET_EXCEEDED"),  # shows at the message's start
    "max_output_tokens": ({"max_output_tokens": 100}, "TOKEN_BUDGET_EXCEEDED"),  # shows at its end
    "max_usd": ({"max_usd": 0.01}, "COST_BUDGET_EXCEEDED"),  # at its end, once its output is priced
}


@pytest.mark.parametrize("cap", CAPS)
def test_a_turn_over_a_budget_runs_its_own_calls_and_is_the_last(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Callable[[Script], FakeAnthropic], cap: str
) -> None:
    """Whichever cap the first turn passes, and whenever its usage shows it: both of its calls run, the budget stops
    the run before the next model request, and the verdict and the sandbox are a replay's of the same usage."""
    limits, status = CAPS[cap]
    first = Turn(tools=[("Bash", {"command": text}) for text in BOTH], input_tokens=2000, output_tokens=500)
    fake = scripted_anthropic(
        Script([first, Turn(tools=[("Bash", {"command": "echo 3 >> out.txt"})]), Turn(text="ok")])
    )
    prices = tmp_path / "prices.yaml"
    prices.write_text(f"models:\n  {PRICED_MODEL}: {{input_per_mtok: 3, output_per_mtok: 15}}\n")
    turns = [bash_turn(BOTH, input_tokens=2000, output_tokens=500), bash_turn(["echo 3 >> out.txt"])]
    live, replayed = run_beside_replay(
        tmp_path,
        system_cli,
        fake,
        turns,
        "--prices",
        str(prices),
        model=PRICED_MODEL,
        success_criteria=[{"type": "file_exists", "path": "out.txt", "description": "out.txt exists"}],
        run_limits={"max_turns": 10, **limits},
    )
    assert live["final_status"] == status and live["out.txt"] == "1\n2\n", live
    assert live["commands"] == BOTH and live["statuses"] == ["success", "success"], live
    assert live == replayed
    assert len(fake.script.agent_requests()) == 1  # the turn over the cap was the last


SLOW = "echo a > out.txt; sleep 11; echo late > late.txt"  # late.txt: past the deadline, within the CLI's grace
CUT_EXCHANGES: dict[str, tuple[list[Turn], dict[str, Any]]] = {
    "single-shot": ([Turn(tools=[("Bash", {"command": SLOW})])], {}),  # the conversation's limit cuts it
    "dialog": (  # the second exchange's own limit cuts it
        [Turn(text="Shall I write it?"), Turn(tools=[("Bash", {"command": SLOW})])],
        {"simulation": {"enabled": True, "persona": "a product owner", "goal": "out.txt exists", "max_turns": 3}},
    ),
}


@pytest.mark.parametrize("conversation", CUT_EXCHANGES)
def test_a_call_cut_by_turn_timeout_stops_at_the_deadline_and_keeps_its_start(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Callable[[Script], FakeAnthropic], conversation: str
) -> None:
    """turn_timeout ends the call with the exchange: nothing it would do after the deadline happens (the CLI's grace
    to exit is no extra time for its tools), and the call is recorded from its start up to the cut."""
    turns, dialog = CUT_EXCHANGES[conversation]
    fake = scripted_anthropic(Script([*turns, Turn(text="done")], user_replies=["Yes, write it."]))
    task = claude_code_task(tmp_path / "tasks", "slow", run_limits={"turn_timeout": 10}, **dialog)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    result = run.result("slow")
    assert result["final_status"] == "TIMEOUT", (result["error_message"], outcome.output)
    sandbox = run.evaluation("slow") / "sandbox"
    assert (sandbox / "out.txt").exists() and not (sandbox / "late.txt").exists()
    (cut,) = (call for iteration in result["iterations"] for call in iteration["commands"])
    assert cut["parameters"]["command"] == SLOW and cut["result_status"] == "error", cut
    assert cut["started_at"] is not None and 0 < cut["duration_ms"] < 11_000, cut  # up to the cut, not its own 11 s
