"""An agent's HOME under /tmp (agent_cli.agent_home) that a killed harness left is removed by the next start of an
agent of its kind; one a live process holds is not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coder_eval_dagster.core import agent_cli

HOLDS_A_HOME = """
import sys, time
from coder_eval_dagster.core.agent_cli import agent_home
with agent_home(sys.argv[1]) as home:
    print(home, flush=True)
    time.sleep(600)
"""


def a_home_held_by_a_process(prefix: str) -> tuple[subprocess.Popen[str], Path]:
    holder = subprocess.Popen([sys.executable, "-c", HOLDS_A_HOME, prefix], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    return holder, Path(holder.stdout.readline().strip()).parent


def test_a_home_left_by_a_killed_process_goes_with_the_next_one_a_held_one_stays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prefix = f"coder-eval-test-{os.getpid()}-"
    monkeypatch.setattr(agent_cli, "LEFT_AFTER_S", 0.0)
    killed, left = a_home_held_by_a_process(prefix)
    living, held = a_home_held_by_a_process(prefix)
    try:
        killed.send_signal(signal.SIGKILL)  # its `finally` never runs: the home stays
        killed.wait(10)
        assert left.is_dir()
        time.sleep(0.05)
        with agent_cli.agent_home(prefix) as home:
            assert home.is_dir()
            assert not left.exists()  # nobody held its lock: removed
            assert held.is_dir()  # its process lives
        assert not home.parent.exists()
    finally:
        living.kill()
        living.wait(10)
        agent_cli.remove_left_homes(prefix)
    assert not held.exists()
