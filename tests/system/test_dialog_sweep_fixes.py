"""Dialogs through the installed CLI, as a tester found them: the simulated user's key, the dialog's token budget,
task_timeout over the simulated user and the per-turn check, an empty simulator message, a reply cut by a run limit,
and how task.html labels the dialog."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from coder_eval_dagster.core.credentials import Credentials
from coder_eval_dagster.core.models.results import DialogMessage
from coder_eval_dagster.core.models.simulation import Simulation
from coder_eval_dagster.core.routing import ApiRoute
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.simulation import ModelUser, TaskTimeUp

from ..support.fake_anthropic import FakeAnthropic, Script, Turn, is_simulator
from ..support.helpers import write_task
from .conftest import (
    SystemCli,
    anthropic_environment,
    claude_code_task,
    new_key,
    only_run,
    proxied_through,
    replay_task_file,
)

pytestmark = pytest.mark.slow

SIMULATION = {"enabled": True, "persona": "a product owner", "goal": "out.txt says done", "max_turns": 4}
WRITES_OUT = [{"type": "file_exists", "path": "out.txt", "description": "out.txt exists"}]
ANY_FILE = [{"type": "run_command", "command": "true", "description": "always"}]


def test_a_dialog_whose_simulated_user_has_no_key_is_refused_before_any_sandbox(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """A codex dialog with CODEX_API_KEY but no ANTHROPIC_API_KEY ran one exchange, its simulated user failing on
    the missing key, and passed (exit 0). The simulated user is on the run's route: the run is refused, exit 2,
    naming the variable and the task; a replayed dialog's recorded user needs no key."""
    codex = {
        "task_id": "codex-dialog",
        "description": "d",
        "initial_prompt": "Please write out.txt",
        "agent": {"type": "codex"},
        "simulation": SIMULATION,
        "success_criteria": WRITES_OUT,
    }
    write_task(tmp_path / "codex", codex, "c.yaml")
    url = "http://127.0.0.1:9/v1"  # never reached
    env = {"CODEX_API_KEY": new_key("sk-proj-"), "CODEX_BASE_URL": url, **proxied_through(url)}
    outcome = system_cli("run", tmp_path / "codex", "--runs-dir", system_cli.runs, env=env, timeout=120)
    assert outcome.code == 2, outcome.output
    assert outcome.err.strip().splitlines()[-1] == (
        "coder-eval run: ANTHROPIC_API_KEY is not set: the simulated user of codex-dialog needs it "
        "(no sandbox was made)"
    )
    assert not system_cli.runs.exists() or not any(system_cli.runs.rglob("sandbox"))

    turns = [{"text": "A"}, {"user": "u2"}, {"text": "B"}]
    replayed = replay_task_file(
        tmp_path / "replay", "replayed", turns, simulation=SIMULATION, success_criteria=ANY_FILE
    )
    outcome, run = system_cli.run(replayed, env={})
    assert outcome.code == 0, outcome.output
    assert run.result("replayed")["simulation"]["total_turns"] == 2


def test_the_dialog_budget_and_its_recorded_tokens_count_cached_input(system_cli: SystemCli) -> None:
    """Each exchange read 5 fresh, 2,000 cache-written and 10,000 cache-read tokens and wrote 50: 12,055 tokens, of
    which 55 were counted, so max_total_tokens 5000 let four exchanges (~48,000 tokens) run. The budget and each
    agent message's `tokens` count all input (docs: "simulated user + agent, input + output tokens")."""
    usage = {"input_tokens": 5, "cache_creation_input_tokens": 2000, "cache_read_input_tokens": 10000}
    reply = {"text": "a reply", "usage": {**usage, "output_tokens": 50}}
    turns = [reply, {"user": "u2"}, reply, {"user": "u3"}, reply, {"user": "u4"}, reply]
    simulation = {**SIMULATION, "max_total_tokens": 5000}
    task = replay_task_file(
        system_cli.folder / "tasks", "cached", turns, simulation=simulation, success_criteria=ANY_FILE
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    result = run.result("cached")
    assert (result["simulation"]["total_turns"], result["simulation"]["stop_reason"]) == (1, "budget")
    assert [(m["role"], m["tokens"]) for m in result["dialog"]] == [("user", 0), ("agent", 12055)]
    (table,) = system_cli.runs.glob("tables/dialog_turns/*/*.parquet")
    assert [row["tokens"] for row in pq.read_table(table).to_pylist() if row["role"] == "agent"] == [12055]


SIMULATOR_LATENCY_S = 120.0


class _SlowUserHandler(FakeAnthropic.handler):
    """The scripted API, its simulated user answering only after SIMULATOR_LATENCY_S."""

    def answer(self, script: Script, body: dict[str, Any], bedrock: bool) -> tuple[int, bytes, str]:
        if is_simulator(body):
            time.sleep(SIMULATOR_LATENCY_S)
        return super().answer(script, body, bedrock)


class SlowUserAnthropic(FakeAnthropic):
    handler = _SlowUserHandler


def test_task_timeout_bounds_the_simulated_users_calls(tmp_path: Path, system_cli: SystemCli) -> None:
    """A simulated user that takes 120 s under task_timeout 30: its call had 300 s whatever the task's time, so a
    user opening a dialog held the evaluation 120 s before the agent even started. Each call gets what is left of
    the task's time; a dialog cut there ends TIMEOUT with no late message, an opening never given ends ERROR."""
    script = Script([Turn(text="What should out.txt say?")], user_replies=["Hi, please write out.txt."])
    folder = tmp_path / "tasks"
    limits = {"task_timeout": 30}  # (the least allowed)
    prompt = "Please write out.txt"
    claude_code_task(folder, "slow-user", initial_prompt=prompt, simulation=SIMULATION, run_limits=limits)
    claude_code_task(folder, "slow-opening", initial_prompt=None, simulation=SIMULATION, run_limits=limits)
    with SlowUserAnthropic(script) as url:
        started = time.monotonic()
        outcome = system_cli("run", folder, "--runs-dir", system_cli.runs, env=anthropic_environment(url, new_key()))
        took = time.monotonic() - started
    run = only_run(system_cli.runs)
    cut, unopened = run.result("slow-user"), run.result("slow-opening")
    assert took < 100, (took, outcome.output)
    assert cut["final_status"] == "TIMEOUT", (cut["error_message"], outcome.output)
    assert [(m["role"], m["text"]) for m in cut["dialog"]] == [("user", prompt), ("agent", "What should out.txt say?")]
    simulated = cut["simulation"]
    assert (simulated["stop_reason"], simulated["simulator_failures"], simulated["total_turns"]) == (
        "run_limit_exceeded",
        0,
        1,
    )
    assert unopened["final_status"] == "ERROR" and unopened["duration_seconds"] < 60, unopened["duration_seconds"]
    assert unopened["error_message"] == "run_limits.task_timeout ran out before the simulated user opened the dialog"
    assert (unopened["simulation"]["stop_reason"], unopened["simulation"]["simulator_failures"]) == (
        "run_limit_exceeded",
        0,
    )


def test_a_simulator_call_gets_only_what_is_left_of_the_tasks_time() -> None:
    """ModelUser's call waited CALL_TIMEOUT_S (300 s) however little of task_timeout was left; none left, it was
    still made."""
    script = Script([])
    with SlowUserAnthropic(script) as url:
        user = ModelUser(
            Simulation(persona="p", goal="g"),
            "claude-sonnet-4-6",
            RunContext(ApiRoute("direct", url, secret="k"), Credentials()),
        )
        dialog = [DialogMessage(turn=1, role="user", text="hi"), DialogMessage(turn=1, role="agent", text="Colour?")]
        user.ends = time.monotonic() - 1
        with pytest.raises(TaskTimeUp):
            user.next_message(dialog)
        assert not script.requests
        user.ends = time.monotonic() + 5  # (the request sent within it on a loaded machine)
        started = time.monotonic()
        with pytest.raises(TaskTimeUp):
            user.next_message(dialog)
        assert time.monotonic() - started < 9 and len(script.requests) == 1


def test_a_slow_per_turn_check_past_task_timeout_ends_the_dialog_before_the_user_is_asked(
    system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """Under check_criteria: every_turn a judge that took past task_timeout was followed by the simulated user's
    next message and another exchange; the deadline is looked at after the check, before the user is asked."""
    fake = scripted_anthropic(Script([], verdict={"score": 0.2, "rationale": "not yet"}, latency_s=35))
    turns = [{"text": "reply one"}, {"user": "u2"}, {"text": "reply two"}]
    judge = {"type": "llm_judge", "description": "judged", "prompt": "Grade the dialog.", "include_dialog": True}
    task = replay_task_file(
        system_cli.folder / "tasks",
        "judged",
        turns,
        simulation={**SIMULATION, "check_criteria": "every_turn"},
        run_limits={"task_timeout": 30},  # (the least allowed)
        success_criteria=[judge],
    )
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    result = run.result("judged")
    assert result["final_status"] == "TIMEOUT", (result["error_message"], outcome.output)
    assert [(m["role"], m["text"]) for m in result["dialog"]] == [("user", "p"), ("agent", "reply one")]
    assert (result["simulation"]["stop_reason"], result["simulation"]["total_turns"]) == ("run_limit_exceeded", 1)


def test_an_empty_simulator_message_is_a_counted_failure(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """docs: a simulated user that fails (... an empty message) ends the dialog with `error`, and
    simulator_failures counts its calls that failed: an empty one was not counted, opening the dialog or later."""
    fake = scripted_anthropic(Script([Turn(text="What should out.txt say?")], user_replies=[""]))
    folder = tmp_path / "tasks"
    claude_code_task(folder, "later", initial_prompt="Please write out.txt", simulation=SIMULATION)
    claude_code_task(folder, "opening", initial_prompt=None, simulation=SIMULATION)
    outcome = system_cli("run", folder, "--runs-dir", system_cli.runs, env=anthropic_environment(fake.url, new_key()))
    results = {
        p.parent.parent.name: json.loads(p.read_text()) for p in system_cli.runs.glob("*/default/*/00/task.json")
    }
    later, opening = results["later"], results["opening"]
    assert (later["simulation"]["stop_reason"], later["simulation"]["simulator_failures"]) == ("error", 1), (
        outcome.output
    )
    assert opening["final_status"] == "ERROR" and "sent no opening message" in opening["error_message"]
    assert (opening["simulation"]["stop_reason"], opening["simulation"]["simulator_failures"]) == ("error", 1)


def test_a_reply_delivered_before_a_run_limit_completes_its_exchange_and_a_cut_one_leaves_no_placeholder(
    system_cli: SystemCli,
) -> None:
    """max_usd breached on exchange 2's reply "B", delivered and recorded: total_turns said 1 (docs: completed
    exchanges). An exchange cut before the agent said anything was recorded as "(the assistant replied with no
    text)", which the judges read as the agent's words."""
    folder = system_cli.folder / "tasks"
    cost = {"input_tokens": 10, "output_tokens": 10, "cost_usd": 0.01}
    delivered = [
        {"text": "A", "usage": cost},
        {"user": "u2"},
        {"text": "B", "usage": {**cost, "cost_usd": 0.02}},
        {"user": "u3"},
        {"text": "C", "usage": cost},
    ]
    limits = {"max_usd": 0.025}
    replay_task_file(
        folder, "delivered", delivered, simulation=SIMULATION, run_limits=limits, success_criteria=ANY_FILE
    )
    cut = [
        {"text": "A", "usage": cost},
        {"user": "u2"},
        {"calls": [{"tool": "Bash", "command": "echo hi"}], "usage": {**cost, "cost_usd": 0.02}},
        {"text": "B", "usage": cost},
    ]
    replay_task_file(folder, "cut", cut, simulation=SIMULATION, run_limits=limits, success_criteria=ANY_FILE)
    outcome = system_cli("run", folder, "--runs-dir", system_cli.runs, env={})
    results = {
        p.parent.parent.name: json.loads(p.read_text()) for p in system_cli.runs.glob("*/default/*/00/task.json")
    }
    first, second = results["delivered"], results["cut"]
    assert first["final_status"] == "COST_BUDGET_EXCEEDED", outcome.output
    assert [(m["role"], m["text"]) for m in first["dialog"]] == [
        ("user", "p"),
        ("agent", "A"),
        ("user", "u2"),
        ("agent", "B"),
    ]
    assert (first["simulation"]["total_turns"], first["simulation"]["stop_reason"]) == (2, "run_limit_exceeded")
    assert second["final_status"] == "COST_BUDGET_EXCEEDED", outcome.output
    assert [(m["role"], m["text"]) for m in second["dialog"]] == [("user", "p"), ("agent", "A"), ("user", "u2")]
    assert (second["simulation"]["total_turns"], second["simulation"]["stop_reason"]) == (1, "run_limit_exceeded")


def test_task_html_labels_the_trial_the_authors_prompt_and_the_closing_message(system_cli: SystemCli) -> None:
    """--repeats 2 with n_trials 1 said "trial 1 of 1" on the second replicate (from 0, and of n_trials); the
    author's initial_prompt was "simulated user · turn 1"; the closing remark before the stop token was
    "user · exchange 3" after two exchanges."""
    folder = system_cli.folder / "tasks"
    turns = [{"text": "A"}, {"user": "u2"}, {"text": "B"}, {"user": "Thanks <<<END>>>"}, {"text": "never"}]
    replay_task_file(folder, "repeated", turns, simulation=SIMULATION, success_criteria=ANY_FILE)
    trials = {**SIMULATION, "n_trials": 2}
    replay_task_file(folder, "trials", turns, simulation=trials, success_criteria=ANY_FILE)
    outcome = system_cli("run", folder, "--runs-dir", system_cli.runs, "--repeats", "2", env={})
    assert outcome.code == 0, outcome.output
    run_dir = only_run(system_cli.runs).path
    repeated = (run_dir / "default/repeated/01/task.html").read_text()
    assert "replicate 2 ·" in repeated and "trial" not in repeated.split("<h2>Dialog</h2>")[1].split("</p>")[0]
    assert "trial 2 of 2" in (run_dir / "default/trials/01/task.html").read_text()
    assert "task prompt · turn 1" in repeated and "simulated user · turn 2" in repeated
    assert "simulated user · closing message" in repeated and "user · closing message" in repeated
    assert "turn 3" not in repeated and "exchange 3" not in repeated
