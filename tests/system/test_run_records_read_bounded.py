"""Through the installed CLI: a run folder's JSON record replaced by a link to a device, a FIFO or a deeply nested
document is a record that does not read (docs/running.md, ``report``): exit 2, one line naming the file, at once
and in little memory, never a hang, an exhausted machine or an internal error (exit 3)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.helpers import criterion
from .conftest import RunFolder, SystemCli, task_file

pytestmark = pytest.mark.slow

BOUNDED = ("prlimit", "--as=4000000000", "--")  # an old build read /dev/zero until the machine had no memory left
DEEP = "[" * 1_000_000 + "]" * 1_000_000


def linked_to_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def a_fifo(path: Path) -> None:
    os.mkfifo(path)


def deeply_nested(path: Path) -> None:
    path.write_text(DEEP, encoding="utf-8")


def finished_run(tmp_path: Path, system_cli: SystemCli) -> RunFolder:
    task = task_file(
        tmp_path / "tasks",
        "t",
        agent={"type": "none"},
        success_criteria=[criterion("file_exists", path="a.txt")],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    return run


def refused_in_one_line(system_cli: SystemCli, record: Path, *args: str | Path) -> None:
    outcome = system_cli(*args, env={}, timeout=30, prefix=BOUNDED)
    assert outcome.code == 2, outcome.output
    lines = outcome.err.strip().splitlines()
    assert len(lines) == 1 and record.name in lines[0] and str(record.parent) in lines[0], outcome.err
    assert "Traceback" not in outcome.output


@pytest.mark.parametrize(
    "damage",
    [linked_to_zero, a_fifo, deeply_nested],
)
def test_report_refuses_a_run_json_that_does_not_read(
    tmp_path: Path, system_cli: SystemCli, damage: Callable[[Path], None]
) -> None:
    run = finished_run(tmp_path, system_cli)
    record = run.path / "run.json"
    record.unlink()
    damage(record)
    refused_in_one_line(system_cli, record, "report", run.path)


def test_an_html_report_refuses_a_deeply_nested_task_json(tmp_path: Path, system_cli: SystemCli) -> None:
    run = finished_run(tmp_path, system_cli)
    record = run.evaluation("t") / "task.json"
    deeply_nested(record)
    refused_in_one_line(system_cli, record, "report", run.path, "-f", "html")
