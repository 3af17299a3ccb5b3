"""Building sandboxes, through the installed ``coder-eval``.

- A PATH folder (or the harness's venv) under ``/dev/shm`` broke every evaluation: the sandbox's own ``/dev``
  was made over it.
- A namespace that could not be built scored the criteria 0 (a FAILURE charged to the model); running.md files
  "a sandbox that could not be built" under ERROR, which comparisons leave out.
- A template file whose name is not UTF-8 stopped the whole run with exit 3 (its fingerprint), losing the other
  tasks' results.
- ``evaluate TASK .`` (coder_eval's usual form) copied ``./runs``, its own sandbox included, into the sandbox
  until the path was too long.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli

pytestmark = pytest.mark.slow

TOOL_TASK = """
task_id: tool
description: a tool from a PATH folder under /dev/shm
agent: {type: none}
sandbox: {python: null}
success_criteria:
  - {type: run_command, command: shm-tool, expected_stdout: from-shm, description: the tool runs}
"""

NO_PRE_RUN = """
task_id: bare
description: criteria only
agent: {type: none}
sandbox: {python: null}
success_criteria:
  - {type: run_command, command: "true", description: true runs}
"""


NAMED_TEMPLATE = """
task_id: named
description: a template holding a name that is not UTF-8
agent: {type: none}
sandbox: {python: null, template_sources: [{type: template_dir, path: tpl}]}
success_criteria:
  - {type: file_exists, path: a.txt, description: copied}
"""

GRADED = """
task_id: good
description: grade a folder
agent: {type: none}
sandbox: {python: null}
success_criteria:
  - {type: file_exists, path: out.txt, description: out.txt is there}
"""


def _executable(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return str(path.parent)


def test_a_path_folder_under_dev_shm_is_shown(tmp_path: Path, system_cli: SystemCli) -> None:
    folder = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="coder-eval-test-"))
    var_tmp = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="coder-eval-test-"))  # the sandbox's /var/tmp is its /tmp
    try:
        tools = _executable(folder / "bin" / "shm-tool", "#!/bin/sh\necho from-shm\n")
        path = f"{tools}:{var_tmp}:{_path()}"
        outcome, run = system_cli.run(write(tmp_path / "tool.yaml", TOOL_TASK), env={"PATH": path})
        assert outcome.code == 0, outcome.output
        assert run.result("tool")["final_status"] == "SUCCESS"
    finally:
        shutil.rmtree(folder)
        shutil.rmtree(var_tmp)


def test_a_sandbox_that_cannot_be_built_is_an_error(tmp_path: Path, system_cli: SystemCli) -> None:
    refusing = _executable(
        tmp_path / "bin" / "unshare", "#!/bin/sh\necho 'unshare: Operation not permitted' >&2\nexit 1\n"
    )
    outcome, run = system_cli.run(write(tmp_path / "bare.yaml", NO_PRE_RUN), env={"PATH": f"{refusing}:{_path()}"})
    result = run.result("bare")
    assert result["final_status"] == "ERROR", outcome.output
    assert "cannot start a process namespace" in result["error_message"]
    assert "Traceback" not in outcome.output


def _path() -> str:
    return os.environ.get("PATH", "")


def test_a_template_name_that_is_not_utf8_is_copied(tmp_path: Path, system_cli: SystemCli) -> None:
    template = tmp_path / "tasks" / "tpl"
    template.mkdir(parents=True)
    (template / "a.txt").write_text("a")
    (Path(os.fsdecode(bytes(template) + b"/caf\xe9.txt"))).write_text("latin-1 name")
    write(tmp_path / "tasks" / "n.yaml", NAMED_TEMPLATE)
    write(tmp_path / "tasks" / "other.yaml", NO_PRE_RUN)
    outcome, run = system_cli.run(tmp_path / "tasks", env={})
    assert outcome.code == 0, outcome.output
    assert run.result("named")["final_status"] == "SUCCESS" and run.result("bare")["final_status"] == "SUCCESS"


def test_evaluate_the_current_folder_leaves_its_runs_out(tmp_path: Path, system_cli: SystemCli) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "out.txt").write_text("hi")
    task = write(tmp_path / "good.yaml", GRADED)
    for _ in range(2):
        done = system_cli("evaluate", task, ".", env={}, cwd=project, timeout=120)
        assert done.code == 0, done.output
    sandboxes = sorted(project.glob("runs/*/sandbox"))
    assert len(sandboxes) == 2
    assert all(sorted(p.name for p in box.iterdir()) == ["out.txt"] for box in sandboxes)  # the runs folder: never


def test_evaluate_leaves_the_folders_it_is_given_as_they_were(tmp_path: Path, system_cli: SystemCli) -> None:
    """An evaluation's folder is private while it runs, then opened: a `--run-dir` under /tmp took /tmp's mode
    (1777, writable by anyone), and one the user kept at 0750 was opened to 0755."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "out.txt").write_text("hi")
    task = write(tmp_path / "good.yaml", GRADED)
    public, kept, private = tmp_path / "public", tmp_path / "kept", tmp_path / "private"
    public.mkdir()
    public.chmod(0o1777)
    kept.mkdir()
    kept.chmod(0o750)
    private.mkdir()
    private.chmod(0o700)
    for run_dir in (public / "out", kept, private):
        done = system_cli("evaluate", task, project, "--run-dir", run_dir, env={})
        assert done.code == 0, done.output
    assert oct((public / "out").stat().st_mode & 0o7777) == oct(0o755)
    assert oct(kept.stat().st_mode & 0o7777) == oct(0o750)
    assert oct(private.stat().st_mode & 0o7777) == oct(0o700)
