"""A sandbox command starts with the signal dispositions a shell gives it, as a user runs it."""

from __future__ import annotations

import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def test_a_pipeline_into_head_ends_when_head_does(system_cli: SystemCli) -> None:
    """The spawner is a Python program, which ignores SIGPIPE: a command that inherited that wrote on into a closed
    pipe (`yes | head -n 1` ran until its timeout, `I/O error` flooding its stderr, and the evaluation was an
    ERROR). Commands get SIGPIPE and SIGXFSZ at their defaults, in pre_run and in the criteria."""
    folder = system_cli.folder / "tasks"
    task_file(
        folder,
        "piped",
        agent={"type": "none"},
        pre_run=[{"command": "while :; do echo y; done | head -n 1 > a.txt", "timeout": 20}],
        success_criteria=[
            {"type": "run_command", "command": "grep -q ^y a.txt && grep SigIgn /proc/self/status", "description": "a"},
            {"type": "run_command", "command": "yes | head -n 1", "expected_stdout": "y", "description": "b"},
        ],
    )
    outcome, run = system_cli.run(folder, env={})
    assert outcome.code == 0, outcome.output
    result = run.result("piped")
    assert result["pre_run_results"][0]["duration_seconds"] < 5
    ignored = int(result["success_criteria_results"][0]["evidence"]["stdout"].split()[-1], 16)
    assert not ignored & (1 << 12 | 1 << 24), hex(ignored)  # SIGPIPE (13) and SIGXFSZ (25) not ignored
