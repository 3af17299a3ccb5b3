"""Ctrl-C ends a run at once when evaluations are still queued behind ``--concurrency``, through the installed CLI.

The interrupted step cancelled the queued evaluations, then waited for every one of them to finish: a cancelled
future never does, so each single Ctrl-C or SIGTERM of a run with more rows than workers took the whole 5 s grace.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli, stop_group

pytestmark = pytest.mark.slow

QUEUED = """
task_id: q
description: three rows, one at a time
agent: {type: none}
sandbox: {python: null}
dataset: {rows: [{id: a}, {id: b}, {id: c}]}
pre_run: [{command: "echo started > started.txt; sleep 30"}]
success_criteria: [{type: file_exists, path: started.txt, description: started}]
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_one_signal_ends_a_run_with_queued_rows_at_once(
    tmp_path: Path, system_cli: SystemCli, signum: signal.Signals
) -> None:
    task = write(tmp_path / "q.yaml", QUEUED)
    process = system_cli.start("run", task, "--runs-dir", system_cli.runs, "-j", "1", env={})
    try:
        deadline = time.monotonic() + 60
        while not list(system_cli.runs.glob("*/default/q/*/00/sandbox/started.txt")):
            assert time.monotonic() < deadline and process.poll() is None, "the run never reached its pre_run"
            time.sleep(0.1)
        sent = time.monotonic()
        process.send_signal(signum)  # one signal, to the process alone: as `kill` sends it
        out, err = process.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        stop_group(process)
    assert process.returncode == 130, (out + err).decode()
    assert took < 3, took
