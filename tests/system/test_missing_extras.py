"""A missing optional extra, as a user hits it: the installed `coder-eval` names the extra to install, no traceback.

The extras are installed here, so each test hides one behind a package on PYTHONPATH whose import fails as
a missing module does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.helpers import write

pytestmark = pytest.mark.slow
CLI = Path(sys.executable).parent / "coder-eval"
DOCKER_FIX = "pip install 'coder-eval-dagster[docker]'"
CODEX_FIX = "pip install 'coder-eval-dagster[codex]'"


def _hide(folder: Path, *modules: str) -> Path:
    """A folder for PYTHONPATH in which importing each of ``modules`` fails as if it were not installed."""
    for module in modules:
        write(
            folder / module / "__init__.py",
            f"raise ModuleNotFoundError(\"No module named '{module}'\", name={module!r})\n",
        )
    return folder


def _coder_eval(tmp_path: Path, hidden: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(hidden), "DAGSTER_HOME": str(tmp_path / "home"), **env}
    return subprocess.run([str(CLI), *args], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300)


def _assert_names_the_fix(done: subprocess.CompletedProcess[str], fix: str) -> None:
    output = done.stdout + done.stderr
    assert fix in output, output
    assert "Traceback" not in output and "internal error" not in output, output


@pytest.mark.parametrize("command", [["sandbox", "build"], ["deploy", "build-image", "--tag", "ce-seam-test:never"]])
def test_an_image_build_without_the_docker_extra_is_one_line_exit_2(tmp_path: Path, command: list[str]) -> None:
    # no engine either: were the SDK not hidden, nothing would be built
    no_engine = f"unix://{tmp_path}/no-engine.sock"
    done = _coder_eval(tmp_path, _hide(tmp_path / "hidden", "docker"), *command, DOCKER_HOST=no_engine)
    _assert_names_the_fix(done, DOCKER_FIX)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_docker_task_without_the_docker_extra_ends_error_naming_it(tmp_path: Path) -> None:
    write(
        tmp_path / "task.yaml",
        """
        task_id: t1
        description: d
        initial_prompt: p
        sandbox: {driver: docker, network: none, python: null}
        agent: {type: replay, trajectory: traj.yaml}
        success_criteria: [{type: run_command, command: "true", description: c}]
        """,
    )
    write(tmp_path / "traj.yaml", "turns: [{calls: [{tool: Bash, command: 'true'}]}]\n")
    hidden = _hide(tmp_path / "hidden", "docker")
    assert _coder_eval(tmp_path, hidden, "validate", "task.yaml").returncode == 0
    done = _coder_eval(tmp_path, hidden, "run", "task.yaml", "--runs-dir", str(tmp_path / "runs"))
    _assert_names_the_fix(done, DOCKER_FIX)
    assert done.returncode == 1 and "ERROR" in done.stdout


def test_a_codex_task_without_the_codex_extra_ends_error_naming_it(tmp_path: Path) -> None:
    write(
        tmp_path / "task.yaml",
        """
        task_id: c1
        description: d
        initial_prompt: p
        sandbox: {python: null}
        agent: {type: codex, model: gpt-fake}
        success_criteria: [{type: run_command, command: "true", description: c}]
        """,
    )
    hidden = _hide(tmp_path / "hidden", "openai_codex", "codex_cli_bin")
    assert _coder_eval(tmp_path, hidden, "validate", "task.yaml").returncode == 0
    # the key makes the CLI re-exec itself (credentials.py): the hidden modules must survive that too
    done = _coder_eval(tmp_path, hidden, "run", "task.yaml", "--runs-dir", str(tmp_path / "runs"), CODEX_API_KEY="k")
    _assert_names_the_fix(done, CODEX_FIX)
    assert done.returncode == 1 and "ERROR" in done.stdout
