"""Ctrl-C stops a run's commands at once, instead of waiting for them to finish."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..support.helpers import write

pytestmark = __import__("pytest").mark.slow


def test_interrupt_kills_running_commands_and_exits_130(tmp_path: Path) -> None:
    write(
        tmp_path / "slow.yaml",
        """
        task_id: slow
        description: slow
        agent: {type: none}
        sandbox: {python: null}
        dataset: {rows: [{id: a}, {id: b}, {id: c}]}
        pre_run: [{command: "echo started > started.txt; sleep 57", timeout: 120}]
        success_criteria: [{type: run_command, command: "true", description: t}]
        """,
    )
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    cli = Path(sys.executable).parent / "coder-eval"
    process = subprocess.Popen(
        [str(cli), "run", str(tmp_path / "slow.yaml"), "--runs-dir", str(tmp_path / "runs")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as in a terminal: a non-interactive parent may have left SIGINT ignored for its children
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("runs/*/default/*/00/sandbox/started.txt")) and time.monotonic() < deadline:
        time.sleep(0.2)
    interrupted = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130 and "interrupted" in err, err
    assert time.monotonic() - interrupted < 10  # not the 57 s of the running commands
    leftover = subprocess.run(["pgrep", "-f", "sleep 57"], capture_output=True, text=True).stdout.split()
    assert leftover == []
