"""Ctrl-C's last line names the command that finishes the run, through the installed CLI.

It said only where what finished is (``interrupted; what finished is in runs/<id>``): a new user had to find
``--resume`` in the docs. The command it prints now is run as printed, and finishes the run.
"""

from __future__ import annotations

import re
import shlex
import signal
import time
from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli, stop_group

pytestmark = pytest.mark.slow

# The pre_run waits: the test interrupts it; the resumed run redoes it, and it ends at its timeout as an ERROR.
WAITS_IN_PRE_RUN = """
task_id: w
description: waits in its pre_run
agent: {type: none}
sandbox: {python: null}
pre_run: [{command: "echo started > started.txt; sleep 60", timeout: 5}]
success_criteria: [{type: file_exists, path: started.txt, description: started}]
"""


def test_ctrl_c_prints_the_resume_command_that_finishes_the_run(tmp_path: Path, system_cli: SystemCli) -> None:
    task = write(tmp_path / "w.yaml", WAITS_IN_PRE_RUN)
    process = system_cli.start("run", task, "--runs-dir", "runs", env={})
    try:
        deadline = time.monotonic() + 60
        while not list(system_cli.runs.glob("*/default/w/00/sandbox/started.txt")):
            assert time.monotonic() < deadline and process.poll() is None, "the run never reached its pre_run"
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        stop_group(process)
    assert process.returncode == 130, (out + err).decode()
    said = re.search(
        r"interrupted; what finished is in (\S+); go on with: (coder-eval run --resume \S+)$", err.decode()
    )
    assert said, err.decode()
    assert said[2] == f"coder-eval run --resume {said[1]}"
    _, *args = shlex.split(said[2])
    resumed = system_cli(*args, env={})
    assert resumed.code == 1, resumed.output  # the run is finished: its one evaluation an ERROR (the timeout)
    assert f"FAILED 1 evaluations: 0 succeeded, 0 failed, 1 errors (1 ERROR) · {said[1]}" in resumed.output
    assert (system_cli.folder / said[1] / "run.json").is_file()
