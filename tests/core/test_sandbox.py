"""The tempdir sandbox: template sources, ignore rules, venv, commands and their process groups."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.sandbox import TemplateError
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox
from coder_eval_dagster.core.sandbox.templates import effective_ignore_patterns

from ..support.helpers import omitted, write


def sandbox(tmp_path: Path, **config) -> TempdirSandbox:
    return TempdirSandbox(tmp_path / "run" / "sandbox", SandboxConfig.model_validate({"python": None, **config}))


def git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout.strip()


def test_repo_clone_at_pinned_commit_then_other_sources(tmp_path: Path) -> None:
    repo = tmp_path / "origin"
    write(repo / "app.py", "VERSION = 1\n")
    git("init", "-q", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "-qm", "one", cwd=repo)
    first = git("rev-parse", "HEAD", cwd=repo)
    write(repo / "app.py", "VERSION = 2\n")
    git("commit", "-qam", "two", cwd=repo)
    write(tmp_path / "task/tpl/extra.txt", "from template")
    for url in (str(repo), f"file://{repo}"):
        box = sandbox(
            tmp_path,
            template_sources=[
                {"type": "repo", "url": url, "commit": first},
                {"type": "template_dir", "path": "tpl"},
                {"type": "starter_files", "files": [{"path": "repo/app.py", "content": "VERSION = 3\n"}]},
            ],
        )
        box.create(tmp_path / "task")
        assert (box.root / "extra.txt").read_text() == "from template"
        assert (box.root / "repo/app.py").read_text() == "VERSION = 3\n"  # last wins
        assert git("rev-parse", "HEAD", cwd=box.root / "repo") == first


def test_a_relative_repo_path_is_the_task_folders_wherever_the_command_runs(tmp_path: Path) -> None:
    repo = tmp_path / "task" / "origin"
    write(repo / "app.py", "VERSION = 1\n")
    git("init", "-q", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "-qm", "one", cwd=repo)
    box = sandbox(tmp_path, template_sources=[{"type": "repo", "url": "origin"}])
    box.create(tmp_path / "task")  # from this process's folder, which holds no "origin"
    assert (box.root / "repo/app.py").read_text() == "VERSION = 1\n"


def test_repo_clone_failure_is_a_template_error(tmp_path: Path) -> None:
    box = sandbox(tmp_path, template_sources=[{"type": "repo", "url": str(tmp_path / "missing")}])
    with pytest.raises(TemplateError, match="git clone"):
        box.create(tmp_path)


def test_template_dir_mount_point_and_ignore_rules(tmp_path: Path) -> None:
    template = tmp_path / "task/tpl"
    for name in (
        "main.py",
        "dist/bundle.js",
        "node_modules/x/index.js",
        "__pycache__/m.pyc",
        "notes.bak",
        ".git/HEAD",
        "pkg/build/out.o",
    ):
        write(template / name, "x")
    box = sandbox(
        tmp_path,
        ignore_patterns=["!dist", " *.bak "],
        template_sources=[{"type": "template_dir", "path": "tpl", "mount_point": "c"}],
    )
    box.create(tmp_path / "task")
    copied = sorted(str(p.relative_to(box.root)) for p in box.root.rglob("*") if p.is_file())
    assert copied == ["c/dist/bundle.js", "c/main.py"]


def test_effective_ignore_patterns() -> None:
    patterns = effective_ignore_patterns(["!node_modules", "*.log"])
    assert "node_modules" not in patterns and "*.log" in patterns and ".venv" in patterns


def test_python_env_packages_make_a_venv(tmp_path: Path) -> None:
    """Made confined, like any command: a local package is one the sandbox holds (its build reaches PyPI only)."""
    package = tmp_path / "template" / "localpkg"
    write(
        package / "pyproject.toml",
        '[project]\nname = "localpkg"\nversion = "1.0"\n'
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n',
    )
    write(package / "localpkg/__init__.py", "ANSWER = 42\n")
    box = TempdirSandbox(
        tmp_path / "run/sandbox",
        SandboxConfig.model_validate(
            {
                "python": {"env_packages": ["./localpkg"]},
                "template_sources": [{"type": "template_dir", "path": "template"}],
            }
        ),
        cache_dir=tmp_path / "cache",
    )
    box.create(tmp_path)
    done = box.run("python -c 'import localpkg, sys; print(localpkg.ANSWER, sys.prefix)'", timeout=60)
    assert done.ok, done.stderr
    answer, prefix = done.stdout.split()
    assert answer == "42" and Path(prefix) == box.workdir / ".venv" and (box.root / ".venv").is_dir()
    # as coder_eval makes it: the interpreter's own packages stay in reach (pip installs into the venv)
    pip = box.run("python -m pip --version", timeout=60)
    assert pip.ok and "pip" in pip.stdout, pip.stderr
    assert "include-system-site-packages = true" in (box.root / ".venv/pyvenv.cfg").read_text()
    # the bare `pip` an agent types works on the venv (it was the interpreter's: a user install into the phase's /tmp)
    for pip in ("pip", "pip3"):
        gone = box.run(f"{pip} uninstall --yes localpkg && cd /tmp && python -c 'import localpkg'", timeout=60)
        assert not gone.ok and "No module named 'localpkg'" in gone.stderr, (gone.stdout, gone.stderr)
        box.run("python -m pip install --quiet --no-index --no-build-isolation ./localpkg", timeout=120)


def test_commands_run_in_the_sandbox_without_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-super-secret-value")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-1234567890")
    box = sandbox(tmp_path)
    box.create(tmp_path)
    done = box.run("pwd; env | grep -c -E 'ANTHROPIC|MY_SERVICE' || true; echo sk-ant-super-secret-value", timeout=10)
    lines = done.stdout.split()
    assert Path(lines[0]) == box.workdir and lines[1] == "0" and lines[2] == "***"


def test_each_command_sees_the_environment_as_it_is_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    box = sandbox(tmp_path)
    box.create(tmp_path)
    assert box.run("echo ${LATER_VAR:-unset}", timeout=10).stdout.split() == ["unset"]
    monkeypatch.setenv("LATER_VAR", "visible")
    monkeypatch.setenv("LATER_TOKEN", "later-secret-4567")
    done = box.run("echo $LATER_VAR ${LATER_TOKEN:-hidden} later-secret-4567", timeout=10)
    assert done.stdout.split() == ["visible", "hidden", "***"]
    monkeypatch.delenv("LATER_VAR")
    assert box.run("echo ${LATER_VAR:-unset}", timeout=10).stdout.split() == ["unset"]


def test_background_daemon_returns_at_once_and_lives_until_the_evaluation_ends(tmp_path: Path) -> None:
    from coder_eval_dagster.core.sandbox.containment import release

    box = sandbox(tmp_path)
    box.create(tmp_path)
    start = time.perf_counter()
    done = box.run("sleep 30 & echo started; echo $! > daemon.pid", timeout=10)
    assert done.ok and done.stdout.strip() == "started" and time.perf_counter() - start < 5
    assert box.run("kill -0 $(cat daemon.pid)", timeout=10).ok  # still there for the next command
    release(box.root.parent)
    assert not box.run("kill -0 $(cat daemon.pid)", timeout=10).ok


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    box = sandbox(tmp_path)
    box.create(tmp_path)
    marker = f"60.{uuid.uuid4().int % 10**9}"
    done = box.run(f"sleep {marker} & sleep {marker}", timeout=0.5)
    assert done.timed_out and done.exit_code is None
    time.sleep(0.2)
    assert subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True).returncode == 1  # none left


def test_output_is_capped_at_100_kb_keeping_head_and_tail(tmp_path: Path) -> None:
    box = sandbox(tmp_path)
    box.create(tmp_path)
    done = box.run('python3 -c \'print("a" * 10 + "x" * 300000 + "z" * 10)\'', timeout=10)
    head, marker, tail = done.stdout.split("\n", 2)
    assert head.startswith("a" * 10) and tail.rstrip().endswith("z" * 10)
    assert len(done.stdout.encode()) <= 100 * 1024 and f"{omitted(300021)} bytes omitted" in marker, marker
