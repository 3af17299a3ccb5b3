"""A resume runs what its snapshot kept (the task files as they were) with the files the snapshot does not keep
(template folders, the reference file, replay trajectories) as they are now: it says so when they changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli

pytestmark = pytest.mark.slow

TEMPLATED = """
task_id: tt
description: a template's version is checked
agent: {type: none}
sandbox: {python: null, template_sources: [{type: template_dir, path: tpl}]}
dataset: {rows: [{id: a}, {id: b}]}
success_criteria: [{type: file_contains, path: ver.txt, includes: [v1], description: the template of the run}]
"""


def test_a_resume_says_which_row_tasks_read_files_changed_since_the_run_started(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    task = write(tmp_path / "tasks/tt.yaml", TEMPLATED)
    write(tmp_path / "tasks/tpl/ver.txt", "v1\n")
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    (run.evaluation("tt/b") / "task.json").unlink()  # coder_eval's way to have one evaluation run again
    resumed = system_cli("run", "--resume", run.path, env={})
    assert resumed.code == 0 and "note" not in resumed.err, resumed.output  # nothing changed: nothing said
    (run.evaluation("tt/b") / "task.json").unlink()
    write(tmp_path / "tasks/tpl/ver.txt", "v2\n")
    resumed = system_cli("run", "--resume", run.path, env={})
    assert resumed.code == 1, resumed.output  # the edited template, as the note says
    said = "note: 1 row-task(s) to run read files that changed since the run started"
    assert said in resumed.err and "they run with them as they are now: tt/b [default]" in resumed.err, resumed.err
