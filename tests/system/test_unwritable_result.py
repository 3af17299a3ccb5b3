"""A resumed run whose evaluation cannot write its task.json (its path taken by a folder): the run did not complete,
and says which evaluation, in one line each and no traceback; it never passes without that evaluation."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def test_an_evaluation_whose_task_json_cannot_be_written_fails_the_run(tmp_path: Path, system_cli: SystemCli) -> None:
    tasks = tmp_path / "tasks"
    for task_id in ("blocked", "kept"):
        task_file(tasks, task_id, agent={"type": "none"})
    outcome, run = system_cli.run(tasks, env={})
    assert outcome.code == 0, outcome.output
    result = run.evaluation("blocked") / "task.json"
    result.unlink()
    result.mkdir()  # nothing can replace a folder with a file

    resumed = system_cli("run", "--resume", run.path, env={})

    assert resumed.code == 1, resumed.output
    assert "Traceback" not in resumed.err, resumed.err
    assert "the run did not complete" in resumed.err and "default/blocked/00 has no task.json" in resumed.err
    assert "PASSED" not in resumed.out, resumed.output
    assert [row["task_id"] for row in run.summary["task_results"]] == ["blocked", "kept"]  # the run's own, kept
