"""No process started by a run outlives it: not after the run, not after Ctrl-C, not 5 s after kill -9 of the CLI.

Background processes are started every way a command can leave its
process group (``&``, ``nohup``, ``setsid``, a double fork) by pre_run
commands, by a replayed agent's Bash calls and by run_command criteria,
each with a unique marker in its command line to find it by from outside.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ..support.helpers import write_replay_task

pytestmark = pytest.mark.slow


def _escapes(marker: str, where: str) -> list[str]:
    """Commands that leave a background process behind in every way there is."""
    sleeper = f"sleep 1000.{marker}{where}"
    return [
        f"{sleeper}1 &",
        f"nohup {sleeper}2 >/dev/null 2>&1 &",
        f"setsid {sleeper}3 &",
        f"(setsid sh -c '{sleeper}4 & exit 0' &)",  # a double-forked daemon in its own session
    ]


def _task(tmp_path: Path, marker: str, then: str = "true") -> Path:
    """A replay task whose pre_run, Bash calls and run_command criterion all start escaping processes."""
    criterion = {"type": "run_command", "command": "\n".join(_escapes(marker, "3")), "description": "daemons"}
    return write_replay_task(
        tmp_path, "escapes", [*_escapes(marker, "2"), then], _escapes(marker, "1"), success_criteria=[criterion]
    )


def _survivors(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-af", f"1000.{marker}"], capture_output=True, text=True).stdout
    return [line for line in found.splitlines() if "pgrep" not in line]


def _start(tmp_path: Path, task: Path) -> subprocess.Popen[str]:
    cli = Path(sys.executable).parent / "coder-eval"
    return subprocess.Popen(
        [str(cli), "run", str(task), "--runs-dir", str(tmp_path / "runs")],
        env={**os.environ, "DAGSTER_HOME": str(tmp_path / "home")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as in a terminal
    )


def _wait_for(pattern: str, tmp_path: Path, process: subprocess.Popen[str], seconds: float = 90) -> None:
    """Until a file matching ``pattern`` (under tmp_path) exists: a command's signal, left in its sandbox."""
    deadline = time.monotonic() + seconds
    while not list(tmp_path.glob(pattern)):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.1)


def _wait_until_gone(marker: str, seconds: float) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := _survivors(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_no_process_survives_a_completed_run(tmp_path: Path) -> None:
    marker = uuid.uuid4().int % 10**9
    process = _start(tmp_path, _task(tmp_path, str(marker)))
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, out + err  # every background start succeeded, the criterion passed
    assert _survivors(str(marker)) == []


def test_no_process_survives_ctrl_c(tmp_path: Path) -> None:
    marker = str(uuid.uuid4().int % 10**9)
    process = _start(tmp_path, _task(tmp_path, marker, then="touch agent-started; sleep 57"))
    _wait_for("runs/*/default/escapes/00/sandbox/agent-started", tmp_path, process)
    assert len(_survivors(marker)) >= 8  # pre_run's and the agent's daemons are running
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert _wait_until_gone(marker, 1) == []


def test_no_process_survives_kill_9_of_the_cli(tmp_path: Path) -> None:
    marker = str(uuid.uuid4().int % 10**9)
    process = _start(tmp_path, _task(tmp_path, marker, then="touch agent-started; sleep 57"))
    _wait_for("runs/*/default/escapes/00/sandbox/agent-started", tmp_path, process)
    assert len(_survivors(marker)) >= 8
    process.kill()
    process.communicate(timeout=30)
    assert _wait_until_gone(marker, 5) == []


def test_the_relay_ends_the_cli_behind_a_forking_launcher() -> None:
    """The agent CLI starts behind ``nsenter --pid``, which forks it and dies of a signal without passing it on: the
    SDK's SIGTERM to the relay left the CLI (and its tool calls) running until the namespace ended."""
    from coder_eval_dagster.core import stdio_relay

    marker = f"300.{uuid.uuid4().int % 10**9}"
    # (as the CLI is not, a namespace's first process ignores SIGTERM: the CLI's stand-in runs under a shell)
    forking = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "sh", "-c", f"sleep {marker}; true"]
    relay = subprocess.Popen(
        [sys.executable, "-I", stdio_relay.__file__, *forking], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    deadline = time.monotonic() + 10
    while not _running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(marker)
    relay.send_signal(signal.SIGTERM)
    relay.communicate(timeout=10)
    deadline = time.monotonic() + 5
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(marker)


def _running(marker: str) -> bool:
    found = subprocess.run(["pgrep", "-f", f"^sleep {marker}"], capture_output=True, text=True, timeout=10)
    return bool(found.stdout.split())
