"""The CLI's verbs on a folder a Dagster launch made (a backfill, a schedule or sensor tick): its runs evaluate the
partitions they were given, a selection of the snapshot's row-tasks, so the rest is never 'unfinished'; and its
chunk runs share it without the CLI's lock, so `--resume` (which would run every row-task) is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .conftest import SystemCli, task_file


def test_rescore_takes_a_launched_folder_whose_selection_finished_and_resume_refuses_it(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    task = task_file(
        tmp_path / "tasks",
        "rows",
        agent={"type": "none"},
        dataset={"rows": [{"id": "a"}, {"id": "b"}, {"id": "c"}]},
        success_criteria=[{"type": "run_command", "command": "true", "description": "runs"}],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    plan_file = run.path / "run_plan.json"  # as a backfill of rows a and b left it: row c never selected
    plan_file.write_text(json.dumps(json.loads(plan_file.read_text()) | {"launched": True}))
    shutil.rmtree(run.path / "default" / "rows" / "c")
    rescored = system_cli("rescore", run.path, env={})
    assert rescored.code == 0, rescored.output
    resumed = system_cli("run", "--resume", run.path, env={})
    assert resumed.code == 2 and "is a Dagster launch's folder" in resumed.output
