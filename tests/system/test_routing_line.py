"""The ``API routing:`` line is printed only for a run with a model-backed agent, judge or simulator (issue 19).

Its other half, printed for model-backed runs, is asserted by the claude-code, judges and Bedrock tests here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..support.helpers import write_task
from .conftest import SystemCli, anthropic_environment, new_key, replay_task_file

pytestmark = pytest.mark.slow
SUCCESS = [{"type": "file_exists", "path": "a.txt", "description": "a.txt exists"}]


def _agentless(folder: Path) -> Path:
    data: dict[str, Any] = {
        "task_id": "agentless",
        "description": "no agent",
        "sandbox": {"python": None},
        "agent": {"type": "none"},
        "pre_run": [{"command": "echo a > a.txt"}],
        "success_criteria": SUCCESS,
    }
    return write_task(folder, data, "agentless.yaml")


def _replay(folder: Path) -> Path:
    turns = [{"calls": [{"tool": "Write", "path": "a.txt", "content": "a\n"}], "text": "done"}]
    return replay_task_file(folder, "replay", turns, success_criteria=SUCCESS)


def test_a_run_that_calls_no_model_prints_no_routing_line(tmp_path: Path, system_cli: SystemCli) -> None:
    tasks = tmp_path / "tasks"
    _agentless(tasks)
    _replay(tasks)
    # a key in the environment, as a user with one exported has: the run still calls no model
    outcome, run = system_cli.run(tasks, env=anthropic_environment("http://127.0.0.1:9", new_key()))
    assert outcome.code == 0, outcome.output
    assert sorted(task["task_id"] for task in run.summary["task_results"]) == ["agentless", "replay"]
    assert "API routing" not in outcome.output
