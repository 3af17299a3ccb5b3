"""Where the harness's tools live, and a sandbox that cannot be built, through the installed ``coder-eval``.

A PATH folder (or the harness's venv) under ``/dev/shm`` broke every evaluation: the sandbox's own ``/dev`` was
made over it. And a namespace that could not be built scored the criteria 0 (a FAILURE charged to the model);
running.md files "a sandbox that could not be built" under ERROR, which comparisons leave out.
"""

from __future__ import annotations

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


def _executable(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return str(path.parent)


def test_a_path_folder_under_dev_shm_is_shown(tmp_path: Path, system_cli: SystemCli) -> None:
    folder = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="coder-eval-test-"))
    try:
        tools = _executable(folder / "bin" / "shm-tool", "#!/bin/sh\necho from-shm\n")
        outcome, run = system_cli.run(write(tmp_path / "tool.yaml", TOOL_TASK), env={"PATH": f"{tools}:{_path()}"})
        assert outcome.code == 0, outcome.output
        assert run.result("tool")["final_status"] == "SUCCESS"
    finally:
        shutil.rmtree(folder)


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
    import os

    return os.environ.get("PATH", "")
