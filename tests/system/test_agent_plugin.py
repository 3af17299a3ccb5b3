"""An agent type and a criterion from an out-of-tree package (tests/support/agent_plugin), through the installed CLI.

The package is built into a wheel and installed, with its entry points, into a
folder of its own put on PYTHONPATH beside the project's venv: coder-eval
finds it only through the entry-point groups.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from uv import find_uv_bin

from coder_eval_dagster.core.models.results import trajectory_of

from ..support.helpers import criterion, write_task
from .conftest import SystemCli, stop_group

pytestmark = pytest.mark.slow
PLUGIN = Path(__file__).parents[1] / "support" / "agent_plugin"
GROUP = "coder_eval_dagster.agents"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the plugin is installed in (built from a copy: a build leaves files beside its sources)."""
    source = shutil.copytree(PLUGIN, tmp_path_factory.mktemp("source") / "agent_plugin")
    target = tmp_path_factory.mktemp("site")
    install = [find_uv_bin(), "pip", "install", "--quiet", "--no-deps"]
    done = subprocess.run(
        [*install, "--python", sys.executable, "--target", str(target), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(target.glob("coder_eval_echo_plugin-*.dist-info/entry_points.txt"))
    return target


def echo_task(folder: Path, agent_type: str = "echo") -> Path:
    return write_task(folder, echo_task_data(agent_type), f"{agent_type}.yaml")


def echo_task_data(agent_type: str) -> dict[str, object]:
    return {
        "task_id": "echo",
        "description": "an agent and a criterion of a plugin",
        "initial_prompt": "hello plugin",
        "sandbox": {"python": None},
        "agent": {"type": agent_type, "model": "echo-1"},
        "success_criteria": [
            {**criterion("echo_says", text="hello plugin"), "weight": 2},
            criterion("command_executed", tool_name="Bash", command_pattern="printf"),
        ],
    }


def test_a_plugin_agent_runs_through_the_cli_with_its_criterion(
    tmp_path: Path, system_cli: SystemCli, plugin_path: Path
) -> None:
    env = {"PYTHONPATH": str(plugin_path)}
    listed = system_cli("agents", "list", env=env)
    assert listed.code == 0 and f"echo\t{GROUP}: echo_plugin.agent:EchoAgent" in listed.out, listed.output

    outcome, run = system_cli.run(echo_task(tmp_path / "tasks"), env=env)
    assert outcome.code == 0, outcome.output
    result = run.result("echo")
    assert (result["agent_type"], result["final_status"]) == ("echo", "SUCCESS"), (
        result["error_message"],
        result["success_criteria_results"],
    )
    assert [(c["criterion_type"], c["score"]) for c in result["success_criteria_results"]] == [
        ("echo_says", 1.0),
        ("command_executed", 1.0),
    ]
    (turn,) = trajectory_of(result["iterations"])
    assert (turn["text"], turn["input_tokens"], turn["calls"][0]["result_status"]) == ("echoed as echo-1", 2, "success")
    assert (run.evaluation("echo") / "sandbox/echo.txt").read_text() == "hello plugin"


def test_an_unknown_type_is_refused_in_one_line_naming_it_the_installed_types_and_the_group(
    tmp_path: Path, system_cli: SystemCli, plugin_path: Path
) -> None:
    typo = system_cli("validate", echo_task(tmp_path / "a", "ech"), env={"PYTHONPATH": str(plugin_path)})
    assert typo.code != 0 and len(typo.err.strip().splitlines()) == 1, typo.output
    assert "unknown agent type 'ech' (did you mean `echo`?): installed are claude-code, codex, opencode" in typo.err
    assert f"replay, none, chatty, echo, stuck; packages add more through the entry-point group {GROUP}" in typo.err
    # without the package its type is unknown too: the entry point is what made it known
    missing = system_cli("validate", echo_task(tmp_path / "b"), env={})
    assert missing.code != 0 and "unknown agent type 'echo'" in missing.err and GROUP in missing.err, missing.output


def test_a_plugin_agent_that_keeps_none_of_its_limits_is_held_to_them(
    tmp_path: Path, system_cli: SystemCli, plugin_path: Path
) -> None:
    """The limits are an agent's duties; one a package adds may ignore them: its turns past max_turns and its
    tokens past the budget are recorded as such (they were a plain FAILURE), and an interrupt stops it (the first
    Ctrl-C did nothing while it waited)."""
    env = {"PYTHONPATH": str(plugin_path)}
    limits = {"max_turns": 3, "max_total_tokens": 1000}
    chatty = {**echo_task_data("chatty"), "run_limits": limits}
    outcome, run = system_cli.run(write_task(tmp_path / "chatty", chatty, "chatty.yaml"), env=env)
    result = run.result("echo")
    assert (result["final_status"], result["max_turns_exhausted"]) == ("TOKEN_BUDGET_EXCEEDED", True), outcome.output
    assert any("max_turns (3)" in warning for warning in result["warnings"]), result["warnings"]

    stuck = write_task(tmp_path / "stuck", echo_task_data("stuck"), "stuck.yaml")
    process = system_cli.start("run", stuck, "--runs-dir", tmp_path / "runs", env=env, stdout=subprocess.DEVNULL)
    time.sleep(4)
    os.killpg(process.pid, signal.SIGINT)
    assert process.wait(timeout=30) == 130


def test_one_sigterm_ends_a_run_whose_check_computes_on(
    tmp_path: Path, system_cli: SystemCli, plugin_path: Path
) -> None:
    """A CI's cancel is one SIGTERM: a check busy in the harness's own thread (no command to stop) kept the process
    waiting for it, whatever it took (a second signal ended it)."""
    task = {
        "task_id": "spinning",
        "description": "a check that computes for ten minutes",
        "agent": {"type": "none"},
        "sandbox": {"python": None},
        "success_criteria": [criterion("spins", seconds=600)],
    }
    env = {"PYTHONPATH": str(plugin_path)}
    process = system_cli.start("run", write_task(tmp_path, task), "--runs-dir", tmp_path / "runs", env=env)
    assert process.stderr is not None
    try:
        for line in process.stderr:  # the progress lines: the check runs once the sandbox stage is over
            if line.startswith(b"sandboxes ready: 1/1"):
                break
        time.sleep(2)
        os.killpg(process.pid, signal.SIGTERM)
        started = time.monotonic()
        assert process.wait(timeout=60) == 130
        assert time.monotonic() - started < 20
    finally:
        stop_group(process)
