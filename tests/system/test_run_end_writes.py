"""What the installed `coder-eval run` writes at a run's end when the file system does not play along.

A file name that is not UTF-8 is evidence like any other, shown with ``\\xff``
escapes: it once failed that evaluation's task.json and then the whole run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import agentless_task, write_task
from .conftest import SystemCli

pytestmark = pytest.mark.slow


def test_a_file_name_that_is_not_utf8_is_evidence_not_a_failed_run(tmp_path: Path) -> None:
    cli = SystemCli(tmp_path)
    task = write_task(
        tmp_path / "tasks",
        agentless_task(
            task_id="latin1",
            sandbox={"python": None},
            pre_run=[
                {"command": "mkdir -p out && echo ok > out/ok.txt && printf x > \"out/$(printf '\\377')evil.txt\""}
            ],
            success_criteria=[{"type": "file_exists", "path": "out/*.txt", "description": "outputs exist"}],
        ),
    )
    done, run = cli.run(task, env={})
    assert done.code == 0, done.output
    assert run.summary["passed"] is True
    (criterion,) = run.result("latin1")["success_criteria_results"]
    assert criterion["evidence"]["resolved"] == ["out/ok.txt", "out/\\xffevil.txt"]
