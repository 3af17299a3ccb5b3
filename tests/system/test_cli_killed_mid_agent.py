"""kill -9 of ``coder-eval run`` while a claude-code agent waits on its model: nothing of the agent's outlives it.

The agent CLI runs behind a relay (``stdio_relay``) the harness starts; the relay and what it started (the
launcher, the CLI, its tools) must end with the harness, as they do when the evaluation ends. Under tempdir
the namespace's holder ends the CLI; under docker the launcher (``docker_attach``) runs on as long as the CLI
in the container does, and the relay with it: the relay, once its caller is gone, must end its launcher.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.fake_anthropic import FakeAnthropic, Script, Turn
from .conftest import SystemCli, anthropic_environment, claude_code_task, new_key, stop_group

pytestmark = pytest.mark.slow

# A launcher that, as docker_attach while the container's CLI runs on, outlives the CLI the holder ended (the
# real nsenter still confines the CLI; the relay's PATH is the harness's), and ignores SIGPIPE as Python does.
LAUNCHER = "#!/bin/sh\ntrap '' PIPE\n/usr/bin/nsenter \"$@\"\nexec sleep 600\n"
MARKER = "CODER_EVAL_TEST_RUN"  # in the harness's environment, so in the relay's (the SDK copies it whole)
Process = tuple[int, str]  # a pid and its start time (a pid reused meanwhile is another process)


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state first), or None once it has gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _relays(value: str) -> list[int]:
    """The relays whose environment carries ``MARKER=value``."""
    found = []
    for pid in _all_pids():
        with contextlib.suppress(OSError):
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
            if f"{MARKER}={value}".encode() in environ and b"stdio_relay" in command:
                found.append(pid)
    return found


def _with_descendants(roots: list[int]) -> set[Process]:
    """``roots`` and every process below them, each with its start time."""
    parents = {pid: fields[1] for pid in _all_pids() if (fields := _stat(pid))}
    tree, grew = set(roots), True
    while grew:
        below = {pid for pid, parent in parents.items() if int(parent) in tree} - tree
        tree |= below
        grew = bool(below)
    return {(pid, fields[19]) for pid in tree if (fields := _stat(pid))}


def _alive(processes: set[Process]) -> set[Process]:
    """Those of ``processes`` still running (a zombie has ended)."""
    return {(pid, started) for pid, started in processes if (f := _stat(pid)) and f[19] == started and f[0] != "Z"}


def _agent_homes(processes: set[Process]) -> set[Path]:
    """The folders (``agent_cli.agent_home``) of the HOMEs ``processes`` run with."""
    homes = set()
    for pid, _ in processes:
        with contextlib.suppress(OSError):
            for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                if entry.startswith(b"HOME=/tmp/coder-eval-"):
                    homes.add(Path(entry[5:].decode()).parent)
    return homes


def _wait_for(condition: Callable[[], object], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)
    return bool(condition())


def test_kill_9_of_the_cli_ends_the_agents_relay_and_everything_it_started(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Callable[[Script], FakeAnthropic]
) -> None:
    fake = scripted_anthropic(Script([Turn(text="never")], latency_s=600))  # the agent waits on its model
    value = secrets.token_hex(8)
    task = claude_code_task(tmp_path / "tasks", "stalled")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/nsenter").write_text(LAUNCHER)
    (tmp_path / "bin/nsenter").chmod(0o755)
    path = f"{tmp_path / 'bin'}:{os.environ['PATH']}"
    env = {**anthropic_environment(fake.url, new_key()), MARKER: value, "PATH": path}
    log = (tmp_path / "cli.log").open("wb")
    process = system_cli.start("run", task, "--runs-dir", system_cli.runs, env=env, stdout=log)
    started: set[Process] = set()
    homes: set[Path] = set()
    try:
        assert _wait_for(lambda: fake.script.paths and _relays(value), 120), (tmp_path / "cli.log").read_text()
        started = _with_descendants(_relays(value))
        assert len(started) > 1, started  # the relay, and the CLI it started
        homes = _agent_homes(started)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        assert _wait_for(lambda: not _alive(started), 5), [
            Path(f"/proc/{pid}/cmdline").read_bytes()[:200] for pid, _ in _alive(started)
        ]
    finally:
        for pid, _ in _alive(started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        stop_group(process)
        log.close()
        for home in homes:  # left by the kill: agent_home's clean-up never ran (not the relay's to remove)
            shutil.rmtree(home, ignore_errors=True)
