"""Folders and values a command would misread, through the installed CLI: each refused in one line, exit 2 (or,
for an empty listing, said on stderr). A --runs-dir in a tables folder broke that table; a folder inside a run given
to rescore or --resume blamed a --runs-dir the user never gave; an empty --task or --baseline was taken as not
given; --runs-dir beside --resume was ignored; `list` of nothing printed nothing."""

from __future__ import annotations

import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


@pytest.fixture
def ran(system_cli: SystemCli) -> SystemCli:
    """One run done in ``system_cli.runs`` (its tables and ``latest`` there), of tasks/ok.yaml."""
    task = task_file(system_cli.folder / "tasks", "ok", agent={"type": "none"})
    outcome = system_cli("run", task, "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 0, outcome.output
    return system_cli


@pytest.mark.parametrize("below", ["tables", "tables/task_results", "tables/task_results/new"])
def test_a_runs_dir_in_a_tables_folder_is_refused(ran: SystemCli, below: str) -> None:
    runs_dir = ran.runs / below
    outcome = ran("run", ran.folder / "tasks" / "ok.yaml", "--runs-dir", runs_dir, env={})
    assert outcome.code == 2, outcome.output
    said = f"coder-eval: --runs-dir {runs_dir} is the tables folder {ran.runs / 'tables'} or inside it"
    assert outcome.err.strip().startswith(said), outcome.err
    assert not list((ran.runs / "tables").glob("**/run_plan.json"))
