"""`-j 1` keeps a run's criteria apart too: the scoring stage ran `--judge-concurrency` (4) evaluations at once
whatever the run, so criteria that need to be alone (a test suite, a fixed port, a database) overlapped."""

from __future__ import annotations

import itertools

import pytest

from ..support.helpers import write
from .conftest import SystemCli, only_run

pytestmark = pytest.mark.slow

TASK = """
task_id: slow
description: each row's criterion takes a second
agent: {type: none}
sandbox: {python: null}
dataset: {rows: [{id: a}, {id: b}, {id: c}]}
success_criteria:
  - {type: run_command, command: "date +%s.%N > t0.txt; sleep 1", description: "a second alone"}
"""


def test_concurrency_one_scores_one_evaluation_at_a_time(system_cli: SystemCli) -> None:
    write(system_cli.folder / "task.yaml", TASK)
    outcome = system_cli("run", system_cli.folder / "task.yaml", "--runs-dir", system_cli.runs, "-j", "1", env={})
    assert outcome.code == 0, outcome.output
    run = only_run(system_cli.runs)
    starts = sorted(float((run.path / "default/slow" / row / "00/sandbox/t0.txt").read_text()) for row in "abc")
    assert all(later - earlier >= 0.9 for earlier, later in itertools.pairwise(starts)), starts
