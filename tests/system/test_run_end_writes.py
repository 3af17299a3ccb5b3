"""What the installed `coder-eval run` writes at a run's end when the file system does not play along.

A file name that is not UTF-8 is evidence like any other, shown with ``\\xff``
escapes: it once failed that evaluation's task.json and then the whole run.
Tables that cannot be written end the run as not completed, in one line
naming the path and the error, with none of the run's table files and no
run.json saying it passed (it once said so beside exit code 1).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ..support.helpers import agentless_task, write_task
from .conftest import SystemCli, only_run, stop_group

pytestmark = pytest.mark.slow

ON_THE_RUN_DATE = "run_date="


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


def test_tables_that_cannot_be_written_leave_no_part_of_the_run_and_no_passed_run_json(tmp_path: Path) -> None:
    cli = SystemCli(tmp_path)
    task = write_task(
        tmp_path / "tasks",
        agentless_task(
            task_id="waits",
            sandbox={"python": None},
            # waits for the test to spoil the tables after the pre-flight check, before they are written
            pre_run=[{"command": "touch started; for i in $(seq 600); do [ -e go ] && exit 0; sleep 0.1; done"}],
            success_criteria=[{"type": "run_command", "command": "true", "description": "runs"}],
        ),
    )
    process = cli.start("run", task, "--runs-dir", cli.runs, env={})
    try:
        sandbox = _wait_for(lambda: next(cli.runs.glob("2*/default/waits/00/sandbox/started"), None)).parent
        run = only_run(cli.runs)
        obstacle = cli.runs / "tables" / "suite_metrics" / f"{ON_THE_RUN_DATE}{run.path.name[:10]}"
        obstacle.parent.mkdir(parents=True)
        obstacle.write_text("a file where the table's folder of the day goes")
        (sandbox / "go").touch()
        _, err = process.communicate(timeout=180)
    finally:
        stop_group(process)
    said = err.decode(errors="replace")
    assert process.returncode == 1, said
    assert f"  suite_metrics: FileExistsError: [Errno 17] File exists: '{obstacle}'\n" in said
    assert not (run.path / "run.json").exists()
    assert [path for path in (cli.runs / "tables").rglob("*") if path.is_file()] == [obstacle]


def test_a_file_where_todays_table_folder_goes_is_refused_before_the_run(tmp_path: Path) -> None:
    cli = SystemCli(tmp_path)
    task = write_task(tmp_path / "tasks", agentless_task(task_id="never", sandbox={"python": None}))
    obstacle = cli.runs / "tables" / "criteria_scores" / f"{ON_THE_RUN_DATE}{datetime.now(UTC).date().isoformat()}"
    obstacle.parent.mkdir(parents=True)
    obstacle.write_text("")
    done = cli("run", task, "--runs-dir", cli.runs, env={})
    assert done.code == 2, done.output
    # the folder named (a path over 120 characters keeps its start and end in the line: pytest's grow)
    named = f"criteria_scores/{obstacle.name} cannot be written (Not a directory)"
    assert done.err.startswith("coder-eval: the tables folder ") and named in done.err, done.err
    assert not any(path.is_dir() and path.name.startswith("2") for path in cli.runs.iterdir())


def _wait_for(found: Callable[[], Path | None], timeout_s: float = 120) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        path = found()
        if path is not None:
            return path
        time.sleep(0.1)
    pytest.fail(f"nothing appeared in {timeout_s:g} s")
