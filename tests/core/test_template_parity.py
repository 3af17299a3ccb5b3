"""Template sources as coder_eval 0.12.16 applies them, so its task files work here unchanged.

A ``repo`` source is cloned into ``repo/`` of the sandbox; ``commit`` takes a
branch (one the clone has only as ``origin/<branch>`` too), a tag or a commit;
neither the URL nor the commit ever reaches git as an option; a
``template_dir`` path takes ``$VAR`` / ``${VAR}`` from the environment (an
unset one is refused when the task is read); the default ignore list is
coder_eval's; a starter file path naming a folder (``a/..``) is refused when
the task is read.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from coder_eval_dagster.core.models.sandbox import RepoSource, SandboxConfig, StarterFile
from coder_eval_dagster.core.sandbox import TemplateError
from coder_eval_dagster.core.sandbox.process import Interrupt
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox
from coder_eval_dagster.core.sandbox.templates import (
    _DEFAULTS_FILE,
    clone_repo,
    default_ignore_patterns,
    run_setup_step,
)

from ..support.helpers import run_cli, task_with, write, write_task

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}
# coder_eval 0.12.16's resources/default_ignore_patterns.yaml, every category in its order.
CODER_EVAL_DEFAULTS = [
    *(".venv", "venv", "ENV", "env", "virtualenv"),
    *(".git", ".svn", ".hg"),
    *("__pycache__", "*.pyc", "*.pyo", "*.pyd", ".pytest_cache", ".ruff_cache", "*.egg-info", ".eggs", "dist", "build"),
    *(".vscode", ".idea", "*.swp", "*.swo", "*~", ".DS_Store", "Thumbs.db"),
    *("node_modules", ".npm", "bower_components"),
    *(".coverage", "htmlcov", ".tox", ".nox"),
    *("*.so", "*.dylib", "*.dll"),
    "cli_mocks",
]
ORACLE_DEFAULTS = Path(sys.prefix) / (
    "coder-eval-oracle/lib/python3.13/site-packages/coder_eval/resources/default_ignore_patterns.yaml"
)


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env={**os.environ, **GIT_IDENTITY}
    )
    return done.stdout.strip()


def origin_with_branch(folder: Path) -> dict[str, str]:
    """A repository whose ``main`` holds f=1 and whose ``feature`` branch (tagged v2) holds f=2: each one's commit."""
    write(folder / "f", "1\n")
    git("init", "-q", "-b", "main", cwd=folder)
    git("add", ".", cwd=folder)
    git("commit", "-qm", "one", cwd=folder)
    commits = {"main": git("rev-parse", "HEAD", cwd=folder)}
    git("checkout", "-qb", "feature", cwd=folder)
    write(folder / "f", "2\n")
    git("commit", "-qam", "two", cwd=folder)
    git("tag", "v2", cwd=folder)
    git("checkout", "-q", "main", cwd=folder)
    return commits | {"feature": git("rev-parse", "feature", cwd=folder)}


def sandbox(tmp_path: Path, *sources: dict[str, object]) -> TempdirSandbox:
    config = SandboxConfig.model_validate({"python": None, "template_sources": list(sources)})
    return TempdirSandbox(tmp_path / "run" / "sandbox", config)


# ----------------------------------------------------------------------------- repo sources


def test_a_repo_is_cloned_into_repo_and_later_sources_land_beside_it(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    commits = origin_with_branch(origin)
    box = sandbox(
        tmp_path,
        {"type": "repo", "url": str(origin)},
        {"type": "starter_files", "files": [{"path": "notes.txt", "content": "n"}, {"path": "repo/f", "content": "3"}]},
    )
    box.create(tmp_path / "task")
    assert sorted(p.name for p in box.root.iterdir()) == ["notes.txt", "repo"]  # no clone at the root
    assert (box.root / "repo/f").read_text() == "3"  # a later source over the clone, by its repo/ path
    assert git("rev-parse", "HEAD", cwd=box.root / "repo") == commits["main"]
    assert git("rev-parse", "--show-toplevel", cwd=box.root / "repo") == str((box.root / "repo").resolve())


@pytest.mark.parametrize("commit", ["feature", "v2", "sha"])
def test_commit_takes_a_remote_only_branch_a_tag_or_a_commit(tmp_path: Path, commit: str) -> None:
    origin = tmp_path / "origin"
    commits = origin_with_branch(origin)
    wanted = commits["feature"] if commit == "sha" else commit
    box = sandbox(tmp_path, {"type": "repo", "url": f"file://{origin}", "commit": wanted})
    box.create(tmp_path / "task")  # before: "'--detach' cannot be used with '-b'" for the branch
    assert (box.root / "repo/f").read_text() == "2\n"
    assert git("rev-parse", "HEAD", cwd=box.root / "repo") == commits["feature"]
    if commit == "feature":  # as `git checkout feature` leaves it: a local branch tracking origin's
        assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=box.root / "repo") == "feature"


def test_a_commit_that_is_a_file_of_the_clone_is_not_a_checkout_of_that_file(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin_with_branch(origin)
    box = sandbox(tmp_path, {"type": "repo", "url": str(origin), "commit": "f"})
    with pytest.raises(TemplateError, match="git checkout f failed"):
        box.create(tmp_path / "task")


def test_a_url_beginning_with_a_dash_is_a_path_for_git_not_an_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git reads the URL after ``--``: a local repository named ``-origin`` is cloned (before: unknown switch)."""
    commits = origin_with_branch(tmp_path / "-origin")
    monkeypatch.chdir(tmp_path)  # a relative URL not beside the task file is the current folder's, as git reads it
    box = sandbox(tmp_path, {"type": "repo", "url": "-origin"})
    box.create(tmp_path / "task")
    assert git("rev-parse", "HEAD", cwd=box.root / "repo") == commits["main"]


def test_an_option_as_url_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    box = sandbox(tmp_path, {"type": "repo", "url": f"--upload-pack=touch {marker};git-upload-pack"})
    with pytest.raises(TemplateError, match="git clone failed"):
        box.create(tmp_path / "task")
    assert not marker.exists()


def test_a_commit_beginning_with_a_dash_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="not an option"):
        RepoSource.model_validate({"type": "repo", "url": "u", "commit": "--orphan=x"})
    origin = tmp_path / "origin"
    origin_with_branch(origin)
    built = RepoSource.model_construct(type="repo", url=str(origin), commit="-b")  # past the model, all the same
    with pytest.raises(TemplateError, match="not a branch, tag or commit"):
        clone_repo(built, tmp_path / "clone", dict(os.environ), tmp_path, Interrupt())


def test_validate_names_the_file_line_and_field_of_a_dashed_commit(tmp_path: Path) -> None:
    source = {"type": "repo", "url": "https://example.invalid/r.git", "commit": "--orphan"}
    path = write_task(tmp_path, task_with(sandbox={"template_sources": [source]}))
    result = run_cli("validate", path)
    assert result.code == 1
    pattern = rf"^{re.escape(str(path))}:\d+: sandbox\.template_sources\.0\.commit: .*not an option"
    assert re.search(pattern, result.err, re.MULTILINE), result.err


# ----------------------------------------------------------------------------- template_dir: $VAR


@pytest.mark.parametrize("spelling", ["$TPL_PARITY_ROOT/tpl", "${TPL_PARITY_ROOT}/tpl"])
def test_a_template_dir_path_takes_variables_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    write(tmp_path / "shared/tpl/from_template.txt", "t")
    monkeypatch.setenv("TPL_PARITY_ROOT", str(tmp_path / "shared"))
    path = write_task(
        tmp_path / "task", task_with(sandbox={"template_sources": [{"type": "template_dir", "path": spelling}]})
    )
    assert run_cli("validate", path).code == 0  # before: folder not found: $TPL_PARITY_ROOT/tpl
    box = sandbox(tmp_path, {"type": "template_dir", "path": spelling})
    box.create(tmp_path / "task")
    assert (box.root / "from_template.txt").read_text() == "t"


def test_a_relative_value_is_relative_to_the_task_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "task/templates/tpl/x.txt", "x")
    monkeypatch.setenv("TPL_PARITY_SUB", "templates")
    box = sandbox(tmp_path, {"type": "template_dir", "path": "$TPL_PARITY_SUB/tpl"})
    box.create(tmp_path / "task")
    assert (box.root / "x.txt").read_text() == "x"


def test_an_unset_variable_is_refused_at_load_with_file_line_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TPL_PARITY_UNSET", raising=False)
    source = {"type": "template_dir", "path": "${TPL_PARITY_UNSET}/tpl"}
    path = write_task(tmp_path, task_with(sandbox={"template_sources": [source]}))
    result = run_cli("validate", path)
    assert result.code == 1
    pattern = rf"^{re.escape(str(path))}:\d+: sandbox\.template_sources\.0\.path: .*\$TPL_PARITY_UNSET is not set"
    assert re.search(pattern, result.err, re.MULTILINE), result.err
    assert "Traceback" not in result.err


def test_a_row_placeholder_and_a_lone_dollar_are_left_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("row", raising=False)
    for path in ("${row.x}/tpl", "a$/tpl", "cost$5"):
        config = SandboxConfig.model_validate({"template_sources": [{"type": "template_dir", "path": path}]})
        assert config.template_sources[0].path == path  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- ignore patterns


def test_the_default_ignore_list_is_coder_evals() -> None:
    assert list(default_ignore_patterns()) == CODER_EVAL_DEFAULTS
    if ORACLE_DEFAULTS.is_file():  # the released file itself, when installed beside this venv
        assert _DEFAULTS_FILE.read_bytes() == ORACLE_DEFAULTS.read_bytes()
        flattened = [p for entries in yaml.safe_load(ORACLE_DEFAULTS.read_text()).values() for p in entries]
        assert list(default_ignore_patterns()) == flattened


def test_a_template_copy_leaves_out_what_coder_eval_leaves_out(tmp_path: Path) -> None:
    names = ["keep.py", "mod.so", "lib.pyd", "notes.txt~", ".x.swp", "Thumbs.db", "ENV/bin/python", "cli_mocks/gh"]
    names += ["bower_components/a.js", "coverage/index.html", ".next/b.js", ".turbo/c", ".mypy_cache/d"]
    for name in names:
        write(tmp_path / "task/tpl" / name, "x")
    box = sandbox(tmp_path, {"type": "template_dir", "path": "tpl"})
    box.create(tmp_path / "task")
    copied = sorted(p.relative_to(box.root).as_posix() for p in box.root.rglob("*") if p.is_file())
    assert copied == [".mypy_cache/d", ".next/b.js", ".turbo/c", "coverage/index.html", "keep.py"]


# ----------------------------------------------------------------------------- starter files


@pytest.mark.parametrize("path", ["a/..", "a/b/..", "a/../", "a/../.", "x/y/../.."])
def test_a_starter_file_path_naming_a_folder_is_refused(path: str) -> None:
    with pytest.raises(ValidationError, match="must name a file"):
        StarterFile(path=path)


@pytest.mark.parametrize("path", ["a/../b", "a/", "./a", "a/./b"])
def test_a_starter_file_path_naming_a_file_is_kept(path: str) -> None:
    assert StarterFile(path=path).path == path


@pytest.mark.parametrize(
    ("second", "said"),
    [("a/..", "must name a file"), ("ok.txt/b", "ok.txt is a file of this source")],  # a folder; a file's folder
)
def test_validate_names_the_file_line_and_field_of_a_starter_path_refused(
    tmp_path: Path, second: str, said: str
) -> None:
    source = {"type": "starter_files", "files": [{"path": "ok.txt"}, {"path": second, "content": "x"}]}
    path = write_task(tmp_path, task_with(sandbox={"template_sources": [source]}))
    result = run_cli("validate", path)
    assert result.code == 1
    pattern = rf"^{re.escape(str(path))}:\d+: sandbox\.template_sources\.0\.files\.1\.path: {re.escape(said)}"
    assert re.search(pattern, result.err, re.MULTILINE), result.err


def test_a_clone_that_hangs_is_stopped_with_its_whole_group(tmp_path: Path) -> None:
    """A remote that never answers: at the timeout git's remote helpers went on as orphans (ppid 1) for minutes; and
    the run's interrupt did not stop the clone."""
    import socket
    import threading
    import time

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.extend(iter(lambda: server.accept()[0], None)), daemon=True).start()
    url = f"http://127.0.0.1:{port}/hangs.git"
    environment = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}

    def helpers_left() -> list[str]:
        found = subprocess.run(["pgrep", "-f", url], capture_output=True, text=True, timeout=10).stdout.split()
        return found

    try:
        started = time.monotonic()
        with pytest.raises(TemplateError, match="timed out"):
            run_setup_step(["git", "clone", "--", url, str(tmp_path / "a")], environment, 2, "git clone", Interrupt())
        assert time.monotonic() - started < 10 and helpers_left() == []
        interrupt = Interrupt()
        threading.Timer(1, interrupt.raise_now).start()
        started = time.monotonic()
        with pytest.raises(TemplateError, match="git clone failed"):
            run_setup_step(["git", "clone", "--", url, str(tmp_path / "b")], environment, 60, "git clone", interrupt)
        assert time.monotonic() - started < 10 and helpers_left() == []
    finally:
        server.close()
        for connection in accepted:
            connection.close()
