"""coder_eval's template sources through the installed ``coder-eval``: a ``repo`` source is cloned into ``repo/``
and checked out at a branch its clone has only as ``origin/<branch>``; a ``template_dir`` path takes ``$VAR``
from the command's environment; an unset variable and a starter file naming a folder are refused by
``validate`` at their file, line and field."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env={**os.environ, **GIT_IDENTITY}
    )
    return done.stdout.strip()


def test_a_repo_is_cloned_into_repo_at_a_remote_only_branch(tmp_path: Path, system_cli: SystemCli) -> None:
    origin = tmp_path / "origin"
    write(origin / "app.py", "VERSION = 1\n")
    git("init", "-q", "-b", "main", cwd=origin)
    git("add", ".", cwd=origin)
    git("commit", "-qm", "one", cwd=origin)
    git("checkout", "-qb", "feature", cwd=origin)
    write(origin / "app.py", "VERSION = 2\n")
    git("commit", "-qam", "two", cwd=origin)
    git("checkout", "-q", "main", cwd=origin)  # `feature` is only origin/feature in a clone
    layout = 'test "$(git -C repo rev-parse --abbrev-ref HEAD)" = feature && test ! -e .git && test ! -e app.py'
    task = task_file(
        tmp_path / "tasks",
        "cloned",
        agent={"type": "none"},
        sandbox={
            "python": None,
            "template_sources": [
                {"type": "repo", "url": str(origin), "commit": "feature"},
                {"type": "starter_files", "files": [{"path": "repo/NOTES.md", "content": "over the clone"}]},
            ],
        },
        pre_run=[],
        success_criteria=[
            {"type": "file_contains", "path": "repo/app.py", "includes": ["VERSION = 2"], "description": "branch"},
            {"type": "file_exists", "path": "repo/NOTES.md", "description": "a later source in repo/"},
            {"type": "run_command", "command": layout, "description": "layout"},
        ],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output  # before: '--detach' cannot be used with '-b'
    assert run.result("cloned")["final_status"] == "SUCCESS", outcome.output
    sandbox = run.evaluation("cloned") / "sandbox"
    assert sorted(p.name for p in sandbox.iterdir()) == ["repo"]
    assert (sandbox / "repo/app.py").read_text() == "VERSION = 2\n"


def test_a_template_dir_path_takes_a_variable_and_refuses_an_unset_one(tmp_path: Path, system_cli: SystemCli) -> None:
    write(tmp_path / "shared/python-starter/main.py", "print('hi')\n")
    task = task_file(
        tmp_path / "tasks",
        "templated",
        agent={"type": "none"},
        sandbox={"python": None, "template_sources": [{"type": "template_dir", "path": "${TEMPLATES}/python-starter"}]},
        pre_run=[],
        success_criteria=[{"type": "file_exists", "path": "main.py", "description": "copied"}],
    )
    unset = system_cli("validate", task, env={})
    assert unset.code == 1, unset.output
    field = r"sandbox\.template_sources\.0\.path"
    assert re.search(rf"^{re.escape(str(task))}:\d+: {field}: .*\$TEMPLATES is not set", unset.err, re.M), unset.output
    assert "Traceback" not in unset.output

    outcome, run = system_cli.run(task, env={"TEMPLATES": str(tmp_path / "shared")})
    assert outcome.code == 0, outcome.output
    assert (run.evaluation("templated") / "sandbox/main.py").read_text() == "print('hi')\n"


def test_validate_refuses_a_starter_file_naming_a_folder(tmp_path: Path, system_cli: SystemCli) -> None:
    task = task_file(
        tmp_path / "tasks",
        "folder",
        agent={"type": "none"},
        sandbox={"python": None, "template_sources": [{"type": "starter_files", "files": [{"path": "a/.."}]}]},
    )
    outcome = system_cli.invalid(task)  # before: valid, then "sandbox setup failed" at run time
    field = r"sandbox\.template_sources\.0\.files\.0\.path"
    assert re.search(rf"^{re.escape(str(task))}:\d+: {field}: must name a file", outcome.err, re.M), outcome.output


def test_sources_that_lay_a_file_and_a_folder_at_one_path_end_in_an_error_naming_it(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """Either way round: a starter file where a template folder is, a template folder where a starter file is (that
    one was a FileExistsError with the sandbox's host path)."""
    write(tmp_path / "tasks/tpl/c/base.txt", "base\n")
    starter = {"type": "starter_files", "files": [{"path": "c", "content": "a file"}]}
    folder = {"type": "template_dir", "path": "tpl"}
    for task_id, sources, error in (
        ("file-then-folder", [starter, folder], "template folder c is a file in the sandbox"),
        ("folder-then-file", [folder, starter], "starter file c is a folder in the sandbox"),
    ):
        task = task_file(
            tmp_path / "tasks",
            task_id,
            agent={"type": "none"},
            sandbox={"python": None, "template_sources": sources},
            pre_run=[],
            success_criteria=[{"type": "file_exists", "path": "c", "description": "laid"}],
        )
        outcome = system_cli("run", task, "--runs-dir", tmp_path / task_id, env={})
        assert outcome.code == 1, outcome.output
        assert f"ERROR: sandbox setup failed: {error}\n" in outcome.out, outcome.output
