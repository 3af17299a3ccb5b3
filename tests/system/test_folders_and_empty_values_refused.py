"""Folders and values a command would misread, through the installed CLI: each refused in one line, exit 2 (or,
for an empty listing, said on stderr). A --runs-dir in a tables folder broke that table; a folder inside a run given
to rescore or --resume blamed a --runs-dir the user never gave; an empty --task or --baseline was taken as not
given; --runs-dir beside --resume was ignored; `list` of nothing printed nothing."""

from __future__ import annotations

import pytest

from .conftest import SystemCli, only_run, task_file

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


@pytest.mark.parametrize(
    "command", [("rescore", "{inner}"), ("run", "--resume", "{inner}"), ("run", "--retry-errors", "{inner}")]
)
def test_a_folder_inside_a_run_names_the_run_folder(ran: SystemCli, command: tuple[str, ...]) -> None:
    run = only_run(ran.runs).path
    inner = run / "default" / "ok"
    outcome = ran(*(word.format(inner=inner) for word in command), env={})
    assert outcome.code == 2, outcome.output
    assert f"{inner} is a folder inside the run folder {run}: name the run folder ({run})" in outcome.err
    assert "--runs-dir" not in outcome.err


def test_a_runs_dir_beside_resume_is_refused(ran: SystemCli) -> None:
    run = only_run(ran.runs).path
    outcome = ran("run", "--resume", run, "--runs-dir", ran.folder / "elsewhere", env={})
    assert outcome.code == 2 and "drop --runs-dir" in outcome.err, outcome.output


@pytest.mark.parametrize("command", [("history", "{runs}", "--task", ""), ("compare", "{run}", "--baseline", "")])
def test_an_empty_value_is_refused(ran: SystemCli, command: tuple[str, ...]) -> None:
    folders = {"runs": ran.runs, "run": only_run(ran.runs).path}
    outcome = ran(*(word.format(**folders) for word in command), env={})
    assert outcome.code == 2 and f"argument {command[2]}: empty value" in outcome.err, outcome.output


def test_a_listing_of_nothing_says_why(system_cli: SystemCli) -> None:
    empty = system_cli.folder / "empty"
    empty.mkdir()
    task = task_file(system_cli.folder / "tasks", "ok", agent={"type": "none"})
    nothing = system_cli("list", empty, env={})
    assert nothing.code == 0 and nothing.out == "", nothing.output
    assert "coder-eval list: no row-tasks selected (the paths hold no task files)" in nothing.err
    filtered = system_cli("list", task, "--tags", "nonexist", env={})
    assert filtered.code == 0 and filtered.out == "", filtered.output
    assert "coder-eval list: no row-tasks selected (left out: 1 tasks without the tags nonexist)" in filtered.err
