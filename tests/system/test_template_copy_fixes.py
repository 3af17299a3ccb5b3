"""Template copies through the installed ``coder-eval``, as a sweep found them wrong: ``template_dir: .`` run from
the task's own folder copied every earlier run (their agents' sandboxes) and the Dagster instance into each new
sandbox, which grew every run; a starter file laid over a template's link wrote through it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("options", "env", "instance"),
    [
        ((), {"DAGSTER_HOME": ""}, ".dagster"),  # the default ./runs and ./.dagster, from the task's folder
        (("--runs-dir", "{folder}/runs"), {}, "dagster_home"),  # both named, inside the task's folder
    ],
)
def test_a_template_holding_the_runs_and_the_instance_copies_neither_into_a_sandbox(
    tmp_path: Path, system_cli: SystemCli, options: tuple[str, ...], env: dict[str, str], instance: str
) -> None:
    write(tmp_path / "data.txt", "data\n")
    task = task_file(
        tmp_path,
        "selft",
        agent={"type": "none"},
        sandbox={"python": None, "template_sources": [{"type": "template_dir", "path": "."}]},
        pre_run=[],
        success_criteria=[{"type": "file_exists", "path": "data.txt", "description": "copied"}],
    )
    for _ in range(2):
        outcome = system_cli("run", task, *(o.format(folder=tmp_path) for o in options), env=env, cwd=tmp_path)
        assert outcome.code == 0, outcome.output
    assert (tmp_path / instance / "dagster.yaml").is_file()  # the instance the runs used: in the template
    latest = max((p for p in (tmp_path / "runs").iterdir() if p.name[0].isdigit()), key=lambda p: p.name)
    sandbox = latest / "default/selft/00/sandbox"
    assert sorted(p.name for p in sandbox.iterdir()) == ["data.txt", "selft.yaml"]


def test_a_starter_file_over_a_templates_link_replaces_the_link(tmp_path: Path, system_cli: SystemCli) -> None:
    """A template shipping ``CLAUDE.md -> AGENTS.md``, a starter CLAUDE.md: AGENTS.md was rewritten."""
    template = tmp_path / "tasks/tpl"
    write(template / "AGENTS.md", "the agents' notes\n")
    os.symlink("AGENTS.md", template / "CLAUDE.md")
    starter = {"type": "starter_files", "files": [{"path": "CLAUDE.md", "content": "the variant's hint\n"}]}
    task = task_file(
        tmp_path / "tasks",
        "hint",
        agent={"type": "none"},
        sandbox={"python": None, "template_sources": [{"type": "template_dir", "path": "tpl"}, starter]},
        pre_run=[],
        success_criteria=[
            {"type": "file_contains", "path": "AGENTS.md", "includes": ["notes"], "description": "kept"},
            {"type": "file_contains", "path": "CLAUDE.md", "includes": ["hint"], "description": "laid"},
        ],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    sandbox = run.evaluation("hint") / "sandbox"
    assert (sandbox / "AGENTS.md").read_text() == "the agents' notes\n"
    assert not (sandbox / "CLAUDE.md").is_symlink()
    assert (template / "AGENTS.md").read_text() == "the agents' notes\n"
