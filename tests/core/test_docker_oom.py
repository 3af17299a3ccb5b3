"""An OOM kill under the docker driver: run_command scores the exit code; OOM is the reason only when unexpected."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import agentless_task, criterion, docker_sandbox, evaluate_task

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("docker_image")]

ALLOCATE_1GB = "python3 -c 'bytearray(1 << 30)'"


def _oom_task(**check: object) -> dict[str, object]:
    return agentless_task(
        sandbox=docker_sandbox(limits={"max_memory_mb": 128}),
        success_criteria=[criterion("run_command", command=ALLOCATE_1GB, **check)],
    )


def test_an_oom_kill_with_the_expected_exit_code_137_passes_and_keeps_oom_killed_in_details(tmp_path: Path) -> None:
    result = evaluate_task(tmp_path, _oom_task(expected_exit_code=137))
    (check,) = result.criteria
    assert (check.score, check.error) == (1.0, None)
    assert check.details["exit_code"] == 137 and check.details["oom_killed"] is True
    assert result.final_status == "SUCCESS"


def test_an_oom_kill_with_an_unexpected_exit_code_fails_with_the_oom_reason(tmp_path: Path) -> None:
    result = evaluate_task(tmp_path, _oom_task())
    (check,) = result.criteria
    assert check.score == 0.0 and check.details["oom_killed"] is True
    assert "OOMKilled" in check.error and "max_memory_mb=128" in check.error
    assert result.final_status == "FAILURE"


def test_an_oom_killed_pre_run_still_aborts_the_evaluation_with_the_oom_reason(tmp_path: Path) -> None:
    task = _oom_task(expected_exit_code=137) | {"pre_run": [{"command": ALLOCATE_1GB}]}
    result = evaluate_task(tmp_path, task)
    (hook,) = result.pre_run_results
    assert hook.exit_code == 137 and hook.oom_killed
    assert result.final_status == "ERROR" and "OOMKilled" in result.error
