"""A whole-field ``${row.x}`` whose value is null: ``""`` where the field takes text only, the null itself where it
takes a number or any JSON value (task-format.md, the typed-placeholder paragraph)."""

from __future__ import annotations

from typing import Any

from coder_eval_dagster.core.datasets import Row
from coder_eval_dagster.core.resolution import _row_criterion

from ..support.helpers import criterion

ROW = Row("a", {"id": "a", "z": None}, "rows.jsonl:1")


def filled(spec: dict[str, Any]) -> Any:
    unknown: set[str] = set()
    _, validated = _row_criterion(spec, ROW, unknown)
    assert not unknown and validated is not None
    return validated


def test_a_text_field_gets_empty_text_and_a_typed_field_keeps_the_null() -> None:
    assert filled(criterion("run_command", command="true", expected_stdout="${row.z}")).expected_stdout == ""
    assert filled(criterion("command_executed", tool_name="${row.z}", command_pattern="${row.z}")).tool_name == ""
    assert filled(criterion("command_executed", max_count="${row.z}")).max_count is None
    assertion = {"expression": "a", "expected": "${row.z}"}
    (checked,) = filled(criterion("json_check", path="x.json", assertions=[assertion])).assertions
    assert checked.expected is None  # any JSON value: compared with null
