"""A YAML boolean where the format wants a number is refused at load, naming the field (pydantic's lax mode read
``weight: true`` as 1.0 and ``timeout: false`` as 0); a field that takes a boolean still takes one."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field, ValidationError

from coder_eval_dagster.core.models.base import StrictModel

from ..support.helpers import criterion, run_cli, task_with, write_task

FE = criterion("file_exists", path="a.txt")
CMD = criterion("command_executed", command_pattern="pytest")
ROWS = {"rows": [{"id": "r1"}]}


def with_criteria(*criteria: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return task_with(success_criteria=list(criteria), **changes)


REFUSED: list[tuple[str, dict[str, Any], str, str]] = [
    ("weight", with_criteria({**FE, "weight": True}), "success_criteria.0.weight", "true"),
    ("weight-false", with_criteria({**FE, "weight": False}), "success_criteria.0.weight", "false"),
    ("pass-threshold", with_criteria({**FE, "pass_threshold": True}), "success_criteria.0.pass_threshold", "true"),
    ("max-turns", task_with(run_limits={"max_turns": True}), "run_limits.max_turns", "true"),
    ("task-timeout", task_with(run_limits={"task_timeout": False}), "run_limits.task_timeout", "false"),
    ("criterion-min-count", with_criteria({**CMD, "min_count": True}), "success_criteria.0.min_count", "true"),
    ("optional-int", with_criteria({**CMD, "max_count": False}), "success_criteria.0.max_count", "false"),
    ("optional-int-agent", task_with(agent={"context_window": True}), "agent.context_window", "true"),
    (
        "dict-of-floats",
        with_criteria({**FE, "suite_thresholds": {"mean": True}}, dataset=ROWS),
        "success_criteria.0.suite_thresholds.mean",
        "true",
    ),
]

ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("skip", task_with(skip=True)),
    ("run-limits-flag", task_with(run_limits={"count_cached_input": True})),
    ("criterion-flag", with_criteria({**CMD, "require_success": True})),
    ("stop-early-kill-switch", task_with(run_limits={"stop_early": False})),
    ("numbers", with_criteria({**FE, "weight": 2, "pass_threshold": 0.5}, run_limits={"max_turns": 5})),
]


@pytest.mark.parametrize(("data", "field", "spelt"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_a_boolean_for_a_number_is_refused_naming_the_field(
    tmp_path: Path, data: dict[str, Any], field: str, spelt: str
) -> None:
    path = write_task(tmp_path, data)
    refused = run_cli("validate", path)
    assert refused.code == 1, refused.out + refused.err
    said = f"{field}: a number is expected, not a boolean ({spelt})"
    assert re.search(rf"^{re.escape(str(path))}:\d+: {re.escape(said)}$", refused.err, re.MULTILINE), refused.err
    assert "Traceback" not in refused.err


@pytest.mark.parametrize("data", [r[1] for r in ACCEPTED], ids=[r[0] for r in ACCEPTED])
def test_a_field_that_takes_a_boolean_still_does(tmp_path: Path, data: dict[str, Any]) -> None:
    accepted = run_cli("validate", write_task(tmp_path, data))
    assert accepted.code == 0, accepted.err


def test_the_blocks_other_problems_are_said_beside_it(tmp_path: Path) -> None:
    """Refusing the boolean does not hide the block's other problems (nor invent a missing field in its place)."""
    path = write_task(tmp_path, with_criteria({"type": "command_executed", "min_count": True, "bogus": 1}))
    said = run_cli("validate", path).err
    assert "success_criteria.0.min_count: a number is expected, not a boolean (true)" in said
    assert "success_criteria.0.bogus: unknown field" in said
    assert "success_criteria.0.description: Field required" in said
    assert "success_criteria.0.min_count: Field required" not in said


class Shapes(StrictModel):
    flag: bool = False
    flag_or_count: bool | int = 0
    anything: Any = None
    free: dict[str, Any] = Field(default_factory=dict)
    free_list: list[Any] = Field(default_factory=list)
    count: Annotated[int, Field(ge=0)] | None = None
    share: float | str = 0.0
    counts: list[int] = Field(default_factory=list)
    shares: dict[str, float] = Field(default_factory=dict)


@pytest.mark.parametrize(
    "data",
    [
        {"flag": True},
        {"flag_or_count": True},
        {"anything": True},
        {"free": {"a": True}},
        {"free_list": [True]},
    ],
    ids=["bool", "bool-or-int", "any", "dict-of-any", "list-of-any"],
)
def test_fields_that_take_free_values_or_booleans_are_untouched(data: dict[str, Any]) -> None:
    assert Shapes.model_validate(data).model_dump(include=set(data)) == data


@pytest.mark.parametrize(
    ("data", "loc"),
    [
        ({"count": True}, ("count",)),
        ({"share": False}, ("share",)),
        ({"counts": [1, True]}, ("counts", 1)),
        ({"shares": {"a": 0.5, "b": False}}, ("shares", "b")),
    ],
    ids=["optional-annotated-int", "float-or-str", "list-item", "dict-value"],
)
def test_the_number_fields_shapes_are_covered(data: dict[str, Any], loc: tuple[str | int, ...]) -> None:
    with pytest.raises(ValidationError) as refused:
        Shapes.model_validate(data)
    [error] = refused.value.errors()
    assert error["loc"] == loc and error["msg"].startswith("a number is expected, not a boolean")
