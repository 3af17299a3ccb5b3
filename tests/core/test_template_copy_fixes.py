"""Template copies a sweep found wrong: a template holding the runs folder copied every earlier run (their agents'
sandboxes) and the Dagster instance; a starter file wrote through a link; starter paths naming a folder, or a
file and a folder at once, passed; gitignore-style ignore patterns (``dist/``, ``./sub``) did nothing."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from coder_eval_dagster.core.models.agent import AgentConfig
from coder_eval_dagster.core.models.sandbox import SandboxConfig, StarterFilesSource
from coder_eval_dagster.core.sandbox import TemplateError
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox

from ..support.helpers import run_cli, task_with, write, write_task


def made(sandbox: Path, task_dir: Path, **config: object) -> list[str]:
    """The files (and links) a sandbox made at ``sandbox`` from ``config`` holds, sandbox-relative."""
    box = TempdirSandbox(sandbox, SandboxConfig.model_validate({"python": None, **config}))
    box.create(task_dir)
    return sorted(p.relative_to(box.root).as_posix() for p in box.root.rglob("*") if not p.is_dir())


# ----------------------------------------------------------------------------- a template holding the runs


def test_a_template_holding_the_runs_folder_and_the_dagster_home_copies_neither(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``template_dir: .`` run from the task's folder with the default ./runs and ./.dagster: an earlier agent's
    sandbox (its solution) and the instance were copied into each new sandbox, which grew every run."""
    task = tmp_path / "task"
    write(task / "data.txt", "data\n")
    write(task / "runs/2026-01-01T00-00-00Z/default/t/00/sandbox/solution.py", "earlier agent's answer\n")
    write(task / "runs/tables/task_results/x.parquet", "rows\n")
    write(task / ".dagster/dagster.yaml", "instance\n")
    write(task / "lib/runs/kept.txt", "a folder named runs that holds no sandbox\n")
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(task)
    sandbox = task / "runs/2026-01-02T00-00-00Z/default/t/00/sandbox"
    copied = made(sandbox, task, template_sources=[{"type": "template_dir", "path": "."}])
    assert copied == ["data.txt", "lib/runs/kept.txt"]


def test_the_dagster_home_set_inside_the_template_is_not_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = tmp_path / "task"
    write(task / "data.txt", "data\n")
    write(task / "home/dagster.yaml", "instance\n")
    write(task / ".dagster/kept.txt", "not the harness's instance: DAGSTER_HOME names another\n")
    monkeypatch.setenv("DAGSTER_HOME", str(task / "home"))
    monkeypatch.chdir(task)
    copied = made(tmp_path / "runs/r/sandbox", task, template_sources=[{"type": "template_dir", "path": "."}])
    assert copied == [".dagster/kept.txt", "data.txt"]


# ----------------------------------------------------------------------------- starter files


def test_a_starter_file_over_a_link_replaces_the_link(tmp_path: Path) -> None:
    """The guide's CLAUDE.md-hint variant over a template shipping ``CLAUDE.md -> AGENTS.md`` rewrote AGENTS.md."""
    write(tmp_path / "task/tpl/AGENTS.md", "the agents' notes\n")
    os.symlink("AGENTS.md", tmp_path / "task/tpl/CLAUDE.md")
    starter = {"type": "starter_files", "files": [{"path": "CLAUDE.md", "content": "the variant's hint\n"}]}
    sources = [{"type": "template_dir", "path": "tpl"}, starter]
    box = TempdirSandbox(
        tmp_path / "run/sandbox", SandboxConfig.model_validate({"python": None, "template_sources": sources})
    )
    box.create(tmp_path / "task")
    assert (box.root / "AGENTS.md").read_text() == "the agents' notes\n"
    assert not (box.root / "CLAUDE.md").is_symlink()
    assert (box.root / "CLAUDE.md").read_text() == "the variant's hint\n"


@pytest.mark.parametrize(
    ("paths", "at"),
    [(["a", "a/b"], 1), (["a/b", "a"], 1), (["x", "./a", "a/b/c"], 2), (["a", "b/../a/c"], 1)],
)
def test_starter_files_of_one_source_laying_a_file_where_another_needs_a_folder_are_refused(
    paths: list[str], at: int
) -> None:
    with pytest.raises(ValidationError, match=r"is a file of this source, so it cannot be a folder holding") as raised:
        StarterFilesSource.model_validate({"type": "starter_files", "files": [{"path": p} for p in paths]})
    assert raised.value.errors()[0]["ctx"]["field"] == f"files.{at}.path"


def test_starter_files_beside_each_other_are_kept() -> None:
    source = StarterFilesSource.model_validate(
        {"type": "starter_files", "files": [{"path": p} for p in ("a", "ab/c", "a")]}
    )
    assert [f.path for f in source.files] == ["a", "ab/c", "a"]


def test_a_starter_file_below_a_file_of_an_earlier_source_is_an_error_naming_it(tmp_path: Path) -> None:
    """Was a raw ``FileExistsError`` with the sandbox's host path."""
    write(tmp_path / "task/tpl/a", "a file\n")
    sources = [
        {"type": "template_dir", "path": "tpl"},
        {"type": "starter_files", "files": [{"path": "a/b/c", "content": "x"}]},
    ]
    with pytest.raises(TemplateError, match=r"^starter file a/b/c: a is a file in the sandbox$"):
        made(tmp_path / "run/sandbox", tmp_path / "task", template_sources=sources)


# ----------------------------------------------------------------------------- ignore patterns


TEMPLATE_FILES = ("main.py", "dist/bundle.js", "sub/x.txt", "pkg/sub/y.txt", "pkg/dist/z.js")


@pytest.mark.parametrize(
    ("patterns", "copied"),
    [
        ([], ["main.py", "pkg/sub/y.txt", "sub/x.txt"]),
        (["sub"], ["main.py"]),  # as before: a name, anywhere
        (["sub/*"], ["main.py", "pkg/sub/y.txt"]),  # as before: a path from the root
        (["!dist"], ["dist/bundle.js", "main.py", "pkg/dist/z.js", "pkg/sub/y.txt", "sub/x.txt"]),
        (["!dist/"], ["dist/bundle.js", "main.py", "pkg/dist/z.js", "pkg/sub/y.txt", "sub/x.txt"]),
        (["!./dist"], ["dist/bundle.js", "main.py", "pkg/dist/z.js", "pkg/sub/y.txt", "sub/x.txt"]),
        (["!/dist/"], ["dist/bundle.js", "main.py", "pkg/dist/z.js", "pkg/sub/y.txt", "sub/x.txt"]),
        (["sub/"], ["main.py"]),  # a folder's name, anywhere
        (["/sub"], ["main.py", "pkg/sub/y.txt"]),  # the root's sub only
        (["./sub"], ["main.py", "pkg/sub/y.txt"]),
        (["./sub/"], ["main.py", "pkg/sub/y.txt"]),
        (["/pkg/sub"], ["main.py", "sub/x.txt"]),
        (["!dist", "/dist"], ["main.py", "pkg/dist/z.js", "pkg/sub/y.txt", "sub/x.txt"]),
    ],
)
def test_gitignore_style_ignore_patterns(tmp_path: Path, patterns: list[str], copied: list[str]) -> None:
    for name in TEMPLATE_FILES:
        write(tmp_path / "task/tpl" / name, "x")
    sources = [{"type": "template_dir", "path": "tpl"}]
    assert (
        made(tmp_path / "run/sandbox", tmp_path / "task", template_sources=sources, ignore_patterns=patterns) == copied
    )


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("dist/", "dist"),
        ("!dist/", "!dist"),
        ("!./dist", "!dist"),
        ("! /dist//", "!dist"),
        ("./sub", "/sub"),
        ("/sub", "/sub"),
        ("././sub/", "/sub"),
        ("//sub", "/sub"),
        ("sub/*", "sub/*"),
        ("*.log", "*.log"),
        (" *.bak ", "*.bak"),
    ],
)
def test_ignore_patterns_are_read_in_one_form(written: str, read: str) -> None:
    """Both blocks that hold them (the agent's: what a judge agent's copy of the sandbox leaves out)."""
    assert SandboxConfig.model_validate({"ignore_patterns": [written]}).ignore_patterns == [read]
    assert AgentConfig.model_validate({"ignore_patterns": [written]}).ignore_patterns == [read]


@pytest.mark.parametrize("written", ["/", "./", "!/", "!./"])
def test_an_ignore_pattern_naming_only_the_root_is_refused(tmp_path: Path, written: str) -> None:
    path = write_task(tmp_path, task_with(sandbox={"ignore_patterns": ["ok", written]}))
    result = run_cli("validate", path)
    assert result.code == 1
    pattern = rf"^{re.escape(str(path))}:\d+: sandbox\.ignore_patterns\.1: .*names no file or folder"
    assert re.search(pattern, result.err, re.MULTILINE), result.err
