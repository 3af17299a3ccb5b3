"""A broken task file whose name is not UTF-8 (``x\\xfe.yaml``) beside a valid one, through the installed CLI: the
run runs the valid task and writes its run.json, the skipped file named by its bytes' escapes. The run ended with
"suite_metrics: UnicodeEncodeError: surrogates not allowed" and no run.json; `report --rebuild` then failed."""

from __future__ import annotations

import json
import os

import pytest

from .conftest import SystemCli, only_run, task_file

pytestmark = pytest.mark.slow


def test_a_skipped_file_name_that_is_not_utf8_is_written_escaped(system_cli: SystemCli) -> None:
    tasks = system_cli.folder / "tasks"
    task_file(tasks, "plain", agent={"type": "none"})
    (tasks / os.fsdecode(b"x\xfe.yaml")).write_text("task_id: [\n", encoding="utf-8")
    outcome = system_cli("run", tasks, "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 1, outcome.output  # an invalid file left out fails the run
    run = only_run(system_cli.runs)
    summary = json.loads((run.path / "run.json").read_bytes().decode("utf-8"))
    (skipped,) = summary["skipped_tasks"]
    assert skipped["path"].endswith("x\\xfe.yaml") and "YAML syntax error" in skipped["reason"]
    assert [row["task_id"] for row in summary["task_results"]] == ["plain"]
    rebuilt = system_cli("report", run.path, "--rebuild", env={})
    assert "internal error" not in rebuilt.err and rebuilt.code in (0, 1), rebuilt.output
