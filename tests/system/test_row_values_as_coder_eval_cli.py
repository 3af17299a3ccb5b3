"""A coder_eval dataset task runs here as it does there, through the installed ``coder-eval``: a criterion's
``run_command`` takes a row's values as written (``expr ${row.args}``, a whole command in ``${row.check}``), where
only the commands coder_eval does not fill (pre_run, post_run) quote them; a null fills a text field with ""."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..support.helpers import criterion, write
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def scores(result: dict[str, Any]) -> list[float]:
    return [c["score"] for c in result["success_criteria_results"]]


def test_a_criterions_command_takes_row_values_as_written(tmp_path: Path, system_cli: SystemCli) -> None:
    row = {"id": "r1", "args": "2 + 3", "sum": 5, "check": "test -s a.txt && grep -q a a.txt"}
    write(tmp_path / "tasks/rows.jsonl", json.dumps(row) + "\n")
    task = task_file(
        tmp_path / "tasks",
        "plain",
        agent={"type": "none"},
        dataset={"paths": ["rows.jsonl"]},
        pre_run=[{"command": "echo a > a.txt; printf %s ${row.args} > args.txt"}],  # quoted: one word
        success_criteria=[
            criterion("run_command", command="expr ${row.args}", expected_stdout="${row.sum}"),
            criterion("run_command", command="${row.check}"),
            criterion("run_command", command='test "$(cat args.txt)" = "${row.args}"'),
        ],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    assert scores(run.result("plain/r1")) == [1.0, 1.0, 1.0]


def test_a_null_row_value_fills_a_text_field_with_empty_text(tmp_path: Path, system_cli: SystemCli) -> None:
    """task-format.md: a field that only takes text gets the text, and null is written as nothing. It was None,
    which an optional field reads as unset: the stdout was never compared, and ``tool_name`` counted every tool."""
    write(
        tmp_path / "tasks/traj.yaml", yaml.safe_dump({"turns": [{"calls": [{"tool": "Bash", "command": "echo hi"}]}]})
    )
    task = task_file(
        tmp_path / "tasks",
        "null",
        agent={"type": "replay", "trajectory": "traj.yaml"},
        initial_prompt="p",
        dataset={"rows": [{"id": "a", "z": None, "n": None}]},
        success_criteria=[
            criterion("run_command", command="echo hi", expected_stdout="${row.z}"),  # compared with ""
            criterion("command_executed", tool_name="${row.z}", min_count=0, max_count=0),  # no tool is named ""
            criterion("command_executed", tool_name="Bash", max_count="${row.n}"),  # a number field keeps null
        ],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 1, outcome.output
    result = run.result("null/a")
    assert scores(result) == [0.0, 1.0, 1.0]
    resolved = result["task_config"]["resolved"]["success_criteria"]
    assert (resolved[0]["expected_stdout"], resolved[1]["tool_name"], resolved[2]["max_count"]) == ("", "", None)
