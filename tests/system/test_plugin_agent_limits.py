"""A plugin agent type that keeps none of its duties is held to them all the same, through the installed CLI.

Its agents (tests/support/limits_agents.py) are a package of their own: the module and the metadata an installer
writes (its entry points), in a folder on PYTHONPATH beside the echo plugin's (test_agent_plugin's ``plugin_path``),
whose criterion the tasks grade with.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.evaluation import AGENT_THREAD_WAIT_S

from ..support import limits_agents
from ..support.helpers import write, write_task
from .conftest import RunFolder, SystemCli
from .test_agent_plugin import GROUP, echo_task_data
from .test_agent_plugin import plugin_path as plugin_path  # the echo plugin, installed once for the module

pytestmark = pytest.mark.slow
AGENTS = {
    "hang": "HangAgent",
    "sleeper": "SleepAgent",
    "busy": "BusyAgent",
    "sync": "SyncAgent",
    "linger": "LingerAgent",
}


@pytest.fixture(scope="module")
def plugin_env(plugin_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """PYTHONPATH with the echo plugin and the limits agents, each found through its entry points."""
    site = tmp_path_factory.mktemp("limits_site")
    shutil.copy(limits_agents.__file__, site / "limits_agents.py")
    metadata = site / "coder_eval_limits_agents-0.1.0.dist-info"
    write(metadata / "METADATA", "Metadata-Version: 2.1\nName: coder-eval-limits-agents\nVersion: 0.1.0\n")
    entries = "".join(f"{name} = limits_agents:{cls}\n" for name, cls in AGENTS.items())
    write(metadata / "entry_points.txt", f"[{GROUP}]\n{entries}")
    return {"PYTHONPATH": os.pathsep.join([str(plugin_path), str(site)])}


def run_agent(
    system_cli: SystemCli, folder: Path, env: dict[str, str], agent_type: str, **limits: int
) -> tuple[dict[str, Any], RunFolder, float]:
    """The echo task run by ``agent_type`` under ``limits``: its task.json, its run and how long the command took."""
    task = {**echo_task_data(agent_type), "run_limits": limits}
    started = time.monotonic()
    outcome, run = system_cli.run(write_task(folder, task, f"{agent_type}.yaml"), env=env, timeout=120)
    took = time.monotonic() - started
    assert outcome.code in (0, 1), outcome.output
    return run.result("echo"), run, took


def test_an_agent_blocked_in_a_sandbox_command_is_stopped_with_it(
    tmp_path: Path, system_cli: SystemCli, plugin_env: dict[str, str]
) -> None:
    """Cancelling the agent left its command running (and asyncio.run waiting for its thread): the run took the
    command's whole time and the command wrote into the sandbox after the stop, before the criteria graded it. Its
    command ended, the agent's thread returns at once (none is left waiting for)."""
    result, run, took = run_agent(system_cli, tmp_path, plugin_env, "hang", task_timeout=limits_agents.TASK_TIMEOUT_S)
    assert result["final_status"] == "TIMEOUT", result["error_message"]
    assert "did not stop at run_limits.task_timeout" in result["error_message"]
    assert result["stage_durations"]["agent"] < limits_agents.STOP_AFTER_S + AGENT_THREAD_WAIT_S
    assert result["warnings"] == []
    assert took < limits_agents.HANG_S
    assert (run.evaluation("echo") / "sandbox/hang.txt").read_text() == "started\n"


def test_an_agent_blocked_in_its_own_thread_is_left_there_with_a_warning(
    tmp_path: Path, system_cli: SystemCli, plugin_env: dict[str, str]
) -> None:
    """No command to end: the harness waits for the thread a bounded time, then goes on (and the process ends)."""
    result, _, took = run_agent(system_cli, tmp_path, plugin_env, "sleeper", task_timeout=limits_agents.TASK_TIMEOUT_S)
    assert result["final_status"] == "TIMEOUT", result["error_message"]
    assert took < limits_agents.HANG_S
    assert any("thread" in warning and "left running" in warning for warning in result["warnings"]), result["warnings"]


def test_an_agent_past_max_tool_calls_is_recorded_so(
    tmp_path: Path, system_cli: SystemCli, plugin_env: dict[str, str]
) -> None:
    """Five calls under max_tool_calls 2 were a clean SUCCESS without a warning."""
    result, _, _ = run_agent(system_cli, tmp_path, plugin_env, "busy", max_tool_calls=2)
    assert result["final_status"] == "SUCCESS", result["error_message"]  # the criteria grade what it left
    warnings = result["warnings"]
    assert any(w.startswith("run_limits.max_tool_calls (2) reached") and "5 tool calls" in w for w in warnings), (
        warnings
    )


def test_an_agent_whose_run_is_not_async_is_refused_before_it_runs(
    tmp_path: Path, system_cli: SystemCli, plugin_env: dict[str, str]
) -> None:
    """A plain ``def run`` ran unsupervised in the harness's thread, then failed naming neither type nor rule."""
    result, run, _ = run_agent(system_cli, tmp_path, plugin_env, "sync")
    assert result["final_status"] == "ERROR"
    error = result["error_message"]
    assert "agent type 'sync' (limits_agents:SyncAgent)" in error and "run must be an async def" in error, error
    assert not (run.evaluation("echo") / "sandbox/ran.txt").exists()


def test_a_thread_an_agent_leaves_behind_runs_nothing_once_its_phase_is_over(
    tmp_path: Path, system_cli: SystemCli, plugin_env: dict[str, str]
) -> None:
    """A thread the agent started itself kept running commands while the criteria graded the sandbox (a second of
    them here) and after: the sandbox is the agent's for its phase only. Its thread's end is one warning, not a
    traceback."""
    grading = {"type": "run_command", "command": "sleep 1", "description": "a second of grading"}
    task = {**echo_task_data("linger"), "success_criteria": [grading]}
    outcome, run = system_cli.run(write_task(tmp_path, task, "linger.yaml"), env=plugin_env, timeout=120)
    assert outcome.code == 0, outcome.output
    assert "Traceback" not in outcome.err, outcome.err
    assert "(linger)) ended on an error: SandboxUnavailable: the agent's phase is over" in outcome.err, outcome.err
    lines = (run.evaluation("echo") / "sandbox/late.txt").read_text().splitlines()
    assert 1 <= len(lines) <= 3, len(lines)  # its first, and what it wrote as the phase ended
