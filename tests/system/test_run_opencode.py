"""opencode tasks through the installed CLI: the real pinned opencode binary against a scripted Chat Completions API.

The binary comes from the npm registry through `coder-eval agents install
opencode`, once per machine (its cache folder), as a user installs it.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.agents.opencode import Installation
from coder_eval_dagster.core.models.results import trajectory_of

from ..support.fake_anthropic import Script
from ..support.fake_chat import ChatScript, Step
from ..support.helpers import criterion, write_task
from .conftest import (
    CLI,
    ENV_PROBE,
    SystemCli,
    agent_usage,
    anthropic_environment,
    carried,
    new_key,
    no_key_anywhere,
    probe_ran,
    proxied_through,
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("opencode")]  # one worker: the install runs once
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def opencode() -> Installation:
    """The pinned opencode, installed by the CLI's own install step unless this machine has it already."""
    installation = Installation.located()
    if not installation.ready():
        done = subprocess.run(
            [str(CLI), "agents", "install", "opencode"], capture_output=True, text=True, timeout=900, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
    assert installation.ready()
    return installation


def opencode_task(folder: Path, task_id: str, model: str = "custom/qwen-test", **changes: Any) -> Path:
    """An opencode task (out.txt must exist), with ``changes`` laid over its top-level keys."""
    data = {
        "task_id": task_id,
        "description": f"the {task_id} path",
        "initial_prompt": "Create out.txt",
        "sandbox": {"python": None},
        "agent": {"type": "opencode", "model": model},
        "success_criteria": [criterion("file_exists", path="out.txt")],
        **changes,
    }
    return write_task(folder, data, f"{task_id}.yaml")


def bash(command: str, **usage: int) -> Step:
    return Step(tools=[("bash", {"command": command, "description": "run it"})], **usage)


def calls_of(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (c["tool_name"], c["result_status"], c["parameters"].get("command", ""))
        for t in trajectory_of(result["iterations"])
        for c in t["calls"]
    ]


def test_an_opencode_task_succeeds_through_a_tool_call_and_its_tools_never_see_the_key(
    tmp_path: Path, system_cli: SystemCli, scripted_chat, opencode: Installation
) -> None:
    key = new_key("sk-oc-")
    fake = scripted_chat(
        ChatScript(
            [
                bash("echo hi > out.txt", prompt_tokens=300, cached_tokens=100, completion_tokens=40),
                bash(ENV_PROBE, prompt_tokens=400, cached_tokens=100, completion_tokens=30),
                Step(text="Done: created out.txt", prompt_tokens=500, cached_tokens=200, completion_tokens=10),
            ]
        )
    )
    # the probe reads /proc, outside the sandbox: opencode asks for that, and only --auto allows it
    agent = {"type": "opencode", "model": "custom/qwen-test", "permission_mode": "bypassPermissions"}
    criteria = [
        criterion("file_exists", path="out.txt"),
        criterion("command_executed", tool_name="Bash", command_pattern="echo hi > out.txt"),
    ]
    task = opencode_task(tmp_path / "tasks", "opencode", agent=agent, success_criteria=criteria)
    env = {"OPENCODE_BASE_URL": fake.url, "OPENCODE_API_KEY": key, **proxied_through(fake.url)}
    outcome, run = system_cli.run(task, env=env)

    assert outcome.code == 0, outcome.output
    # three round trips on Chat Completions, nothing else: no title side call, no fetch through the proxy (CONNECT)
    assert fake.script.paths == [CHAT] * 3 and not fake.script.side_requests, fake.script.paths
    assert {body["model"] for body in fake.script.requests} == {"qwen-test"}
    assert carried(key, fake.script.headers)  # the key itself reached the API (and, below, nothing else)
    result = run.result("opencode")
    assert result["final_status"] == "SUCCESS", (result["error_message"], result["success_criteria_results"])
    assert calls_of(result) == [("Bash", "success", "echo hi > out.txt"), ("Bash", "success", ENV_PROBE)]
    usage = [
        (t["input_tokens"], t["cache_read_input_tokens"], t["output_tokens"])
        for t in trajectory_of(result["iterations"])
    ]
    assert usage == [(200, 100, 40), (300, 100, 30), (300, 200, 10)]  # input is the uncached part
    assert trajectory_of(result["iterations"])[-1]["text"] == "Done: created out.txt"
    # when each call and turn ran, as the other agents record them (all were null, tool_union_ms too)
    turns = trajectory_of(result["iterations"])
    assert all(t["started_at"] and t["ended_at"] for t in turns), turns
    calls = [c for it in result["iterations"] for c in it["commands"]]
    assert all(c["started_at"] and c["execution_started_at"] for c in calls), calls
    assert result["iterations"][0]["tool_union_ms"] is not None
    assert agent_usage(result)[2] is None  # a custom model has no price: none is made up
    probe_ran(run.evaluation("opencode") / "sandbox")
    no_key_anywhere(key, system_cli.runs, system_cli.home, output=outcome.output)


def test_a_cost_budget_binds_on_the_cost_opencode_reports(
    tmp_path: Path, system_cli: SystemCli, scripted_chat, opencode: Installation
) -> None:
    key = new_key("sk-or-")
    # anthropic/claude-sonnet-4 on OpenRouter: $3 per million input tokens, $15 output (opencode's catalog)
    steps = [bash(f"echo {n} >> log.txt", prompt_tokens=1000, cached_tokens=0, completion_tokens=300) for n in range(4)]
    fake = scripted_chat(ChatScript(steps))
    task = opencode_task(
        tmp_path / "tasks",
        "budget",
        run_limits={"max_usd": 0.01},
        success_criteria=[criterion("file_exists", path="log.txt")],
        agent={
            "type": "opencode",
            "model": "openrouter/anthropic/claude-sonnet-4",
            "allowed_tools": ["Bash", "Read", "Write"],
            "disallowed_tools": ["read", "Edit"],  # a denial wins; Edit is Write's permission too
        },
    )
    env = {"OPENROUTER_BASE_URL": fake.url, "OPENROUTER_API_KEY": key, **proxied_through(fake.url)}
    outcome, run = system_cli.run(task, env=env)

    result = run.result("budget")
    assert result["final_status"] == "COST_BUDGET_EXCEEDED", (result["error_message"], outcome.output)
    assert [t["cost_usd"] for t in trajectory_of(result["iterations"])] == pytest.approx(
        [0.0075, 0.0075]
    )  # 1000 x $3 + 300 x $15
    # the CLI is killed on the second turn's usage: its next request may be on its way, never its call run
    assert len(fake.script.requests) in (2, 3) and carried(key, fake.script.headers)
    assert {tuple(tool["function"]["name"] for tool in body["tools"]) for body in fake.script.requests} == {("bash",)}
    assert (run.evaluation("budget") / "sandbox/log.txt").read_text().split() == ["0", "1"]
    no_key_anywhere(key, system_cli.runs, system_cli.home, output=outcome.output)


def test_early_stop_and_max_turns_stop_the_cli(tmp_path: Path, system_cli: SystemCli, scripted_chat, opencode) -> None:
    fake = scripted_chat(
        ChatScript([bash("echo a > out.txt"), bash("git push --force"), bash("touch late.txt"), Step(text="Done.")])
    )
    guard = {**criterion("command_executed", command_pattern="git push", min_count=0, max_count=0), "stop_early": {}}
    tasks = tmp_path / "tasks"
    opencode_task(tasks, "guarded", success_criteria=[guard], run_limits={"max_turns": 10})
    opencode_task(tasks, "capped", run_limits={"max_turns": 2})
    opencode_task(tasks, "called", run_limits={"max_turns": 10, "max_tool_calls": 2})  # it was never read
    env = {"OPENCODE_BASE_URL": fake.url, "OPENCODE_API_KEY": new_key(), **proxied_through(fake.url)}
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  custom/qwen-test: {input_per_mtok: 1.0, output_per_mtok: 2.0}\n")
    outcome, run = system_cli.run(tasks, "--prices", str(prices), env=env)
    called = run.result("called")
    assert called["final_status"] == "SUCCESS" and len(calls_of(called)) == 2, (called["error_message"], outcome.out)
    assert "run_limits.max_tool_calls (2) reached: the agent was stopped there" in called["warnings"]
    assert not (run.evaluation("called") / "sandbox/late.txt").exists()

    guarded, capped = run.result("guarded"), run.result("capped")
    assert guarded["stopped_early"] and guarded["early_stop_reason"] == "criterion_failed", outcome.output
    # the CLI was stopped before the deciding turn's usage came: that billed round trip has no cost, a floor
    rows = {row["task_id"]: row for row in run.summary["task_results"]}
    assert rows["guarded"]["cost_complete"] is False and rows["capped"]["cost_complete"] is True
    assert guarded["final_status"] == "FAILURE" and guarded["turns_remaining_at_stop"] == 8
    assert calls_of(guarded)[-1][2] == "git push --force"
    # max_turns: two round trips, the second one's call run, no third one; the run is scored as it stands
    assert capped["final_status"] == "SUCCESS", (capped["error_message"], outcome.output)
    for result in (guarded, capped):
        assert result["total_turns"] == 2
    for task_id in ("guarded", "capped"):
        assert not (run.evaluation(task_id) / "sandbox/late.txt").exists()


def test_a_timeout_stops_the_cli_and_what_it_would_do_next(
    tmp_path: Path, system_cli: SystemCli, scripted_chat, opencode
) -> None:
    """At a timeout the harness killed the relay between it and the CLI, and the CLI ran on: its next request went
    through, the model's late tool call ran in the sandbox and was graded (late.txt scored 1.0), the stage ran
    until the model answered."""
    # the turn has room for the CLI's start and its first exchange on a loaded machine (four test workers on two
    # cores took over 10 s); the late answer comes well after it
    late = Step(tools=[("bash", {"command": "touch late.txt", "description": "run it"})], delay_s=40)
    fake = scripted_chat(ChatScript([bash("echo a > out.txt"), late, Step(text="Done.")]))
    check = criterion("file_exists", path="late.txt")
    task = opencode_task(tmp_path / "tasks", "slow", run_limits={"turn_timeout": 20}, success_criteria=[check])
    env = {"OPENCODE_BASE_URL": fake.url, "OPENCODE_API_KEY": new_key(), **proxied_through(fake.url)}
    outcome, run = system_cli.run(task, env=env)
    result = run.result("slow")
    assert result["final_status"] == "TIMEOUT", (result["error_message"], outcome.output)
    assert result["stage_durations"]["agent"] < 36, result["stage_durations"]
    time.sleep(22)  # past the model's late answer: nothing of the CLI is left to act on it
    assert not (run.evaluation("slow") / "sandbox/late.txt").exists()
    assert len(fake.script.requests) == 2, fake.script.requests


def test_a_simulated_dialog_continues_the_opencode_session(
    tmp_path: Path, system_cli: SystemCli, scripted_chat, scripted_anthropic, opencode: Installation
) -> None:
    key = new_key("sk-oc-")
    # each exchange starts the CLI again through a launcher on this machine: were it in the agent's HOME, the
    # first exchange's Bash could rewrite it and the second would run the agent's code here, unconfined
    escaped = tmp_path / "escaped"  # a host path: a confined command cannot write it
    rewrite = (
        'for f in "$HOME"/* "$HOME"/*/*; do [ -f "$f" ] && grep -q exec "$f" && '
        f"printf '#!/bin/sh\\ntouch {escaped}\\nexit 1\\n' > \"$f\"; done; "
    )
    chat = scripted_chat(
        ChatScript(
            [
                Step(text="What should out.txt say?"),
                bash(rewrite + "echo done > out.txt"),
                Step(text="out.txt says done."),
            ]
        )
    )
    simulator = scripted_anthropic(Script([], user_replies=["It should say done.", "Thanks <<<END>>>"]))
    simulation = {"enabled": True, "persona": "a product owner", "goal": "out.txt says done", "max_turns": 4}
    task = opencode_task(tmp_path / "tasks", "dialog", initial_prompt="Please write out.txt", simulation=simulation)
    env = {
        "OPENCODE_BASE_URL": chat.url,
        "OPENCODE_API_KEY": key,
        **anthropic_environment(simulator.url, new_key()),
        **proxied_through(chat.url),
    }
    outcome, run = system_cli.run(task, env=env)

    assert outcome.code == 0, outcome.output
    result = run.result("dialog")
    assert result["final_status"] == "SUCCESS", (result["error_message"], result["success_criteria_results"])
    assert [(m["role"], m["text"]) for m in result["dialog"]] == [
        ("user", "Please write out.txt"),
        ("agent", "What should out.txt say?"),
        ("user", "It should say done."),
        ("agent", "out.txt says done."),
        ("user", "Thanks"),
    ]
    assert not escaped.exists()
    # the second exchange's requests hold the first one (the same session, continued)
    second = chat.script.requests[1]["messages"]
    assert [m["role"] for m in second][1:] == ["user", "assistant", "user"]
    assert second[-1]["content"] == "It should say done."
    no_key_anywhere(key, system_cli.runs, system_cli.home, output=outcome.output)


def test_an_unrouted_provider_and_a_missing_key_end_their_tasks_as_errors(
    tmp_path: Path, system_cli: SystemCli, opencode: Installation
) -> None:
    tasks = tmp_path / "tasks"
    opencode_task(tasks, "unrouted", model="google/gemini-2.5-pro")
    opencode_task(tasks, "keyless", model="custom/qwen-test")
    outcome, run = system_cli.run(tasks, env={"OPENCODE_BASE_URL": "http://127.0.0.1:9/v1"})

    unrouted, keyless = run.result("unrouted"), run.result("keyless")
    assert unrouted["final_status"] == keyless["final_status"] == "ERROR", outcome.output
    assert (
        "opencode provider 'google' is not routed by coder-eval; use one of custom, anthropic"
        in unrouted["error_message"]
    )
    assert keyless["error_message"] == "model custom/... needs OPENCODE_BASE_URL and OPENCODE_API_KEY"
