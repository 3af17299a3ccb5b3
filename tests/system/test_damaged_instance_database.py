"""A Dagster instance whose SQLite database is damaged (overwritten after a first run), through the installed CLI:
run, register and prune say in one line that the instance cannot be used, naming the file, exit 2. It was an
"internal error: DatabaseError" (exit 3) that named no file."""

from __future__ import annotations

import os

import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def test_a_damaged_database_is_one_line_naming_its_file(system_cli: SystemCli) -> None:
    task = task_file(system_cli.folder / "tasks", "plain", agent={"type": "none"})
    first = system_cli("run", task, "--runs-dir", system_cli.runs, env={})
    assert first.code == 0, first.output
    database = system_cli.home / "history" / "runs.db"
    database.write_bytes(os.urandom(5000))
    for command in [
        ("run", task, "--runs-dir", system_cli.runs),
        ("register", task),
        ("prune", "--runs-dir", system_cli.runs, "--keep-days", "3"),
    ]:
        outcome = system_cli(*command, env={})
        assert outcome.code == 2, outcome.output
        (line,) = outcome.err.strip().splitlines()
        assert line.startswith("coder-eval: the Dagster instance cannot be used: ") and f": {database} (" in line, line
