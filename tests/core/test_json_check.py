"""`json_check` assertions: a broken `expected` is a load error, a failing one at run time fails alone."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from coder_eval_dagster.core.check_context import CheckContext
from coder_eval_dagster.core.criteria import criterion_union
from coder_eval_dagster.core.criteria.json_check import Assertion, JsonCheck
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox
from coder_eval_dagster.core.scoring import criterion_result, run_check

from ..support.helpers import criterion, run_cli, task_with, write_task

GOOD = {"expression": "a", "expected": 1}


def _validate(folder: Path, assertions: list[dict[str, Any]], **changes: Any) -> Any:
    task = task_with(success_criteria=[criterion("json_check", path="r.json", assertions=assertions)], **changes)
    return run_cli("validate", write_task(folder, task))


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ({"expression": "s", "operator": "regex", "expected": "(("}, "invalid regular expression: missing )"),
        ({"expression": "s", "operator": "type", "expected": "banana"}, "unknown JSON type 'banana'; use one of"),
        ({"expression": "s", "operator": "type", "expected": 3}, "unknown JSON type 3"),
        ({"expression": "b", "operator": "regex", "expected": 5}, 'a regex is text: quote it ("5"), not 5'),
    ],
)
def test_broken_expected_is_a_load_error_naming_the_field(tmp_path: Path, bad: dict[str, Any], fragment: str) -> None:
    result = _validate(tmp_path, [GOOD, bad])
    assert result.code == 1
    field = "success_criteria.0.assertions.1.expected"
    assert re.search(rf"task\.yaml:\d+: {re.escape(field)}: .*{re.escape(fragment)}", result.err), result.err


@pytest.mark.parametrize(
    "good",
    [
        {"expression": "s", "operator": "regex", "expected": r"^\d+$"},
        {"expression": "s", "operator": "type", "expected": "integer"},
        {"expression": "s", "operator": "regex", "expected": "${row.p}(("},  # the row's value is checked, not this
        {"expression": "s", "operator": "type", "expected": "${row.t}"},
    ],
)
def test_valid_or_templated_expected_loads(good: dict[str, Any]) -> None:
    assert Assertion.model_validate(good).expected == good["expected"]


def test_row_value_is_checked_per_row(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text(
        json.dumps({"id": "r1", "p": "x"}) + "\n" + json.dumps({"id": "r2", "p": "(("})
    )
    bad = {"expression": "s", "operator": "regex", "expected": "${row.p}"}
    result = _validate(tmp_path, [GOOD, bad], dataset={"paths": ["rows.jsonl"]})
    assert result.code == 1
    assert re.search(r"assertions\.1\.expected: invalid regular expression.*row 'r2'", result.err), result.err


@pytest.fixture
def context(tmp_path: Path) -> CheckContext:
    box = TempdirSandbox(tmp_path / "sandbox", SandboxConfig(python=None))
    box.root.mkdir()
    (box.root / "r.json").write_text(json.dumps({"a": 1, "s": "x"}))
    return CheckContext(box, tmp_path, None, None, run=RunContext.create())


def _check(context: CheckContext, bad: Assertion) -> Any:
    """The criterion with ``bad`` between two passing assertions, built past validation as a row's value could."""
    parsed = TypeAdapter(criterion_union()).validate_python(
        {"type": "json_check", "description": "d", "path": "r.json", "assertions": [GOOD, GOOD]}
    )
    assert isinstance(parsed, JsonCheck)
    parsed.assertions.insert(1, bad)
    return criterion_result(0, parsed, run_check(parsed, context), None)


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        (Assertion.model_construct(expression="s", operator="regex", expected="(("), "s: invalid regular expression"),
        (Assertion.model_construct(expression="s", operator="type", expected="banana"), "unknown JSON type"),
        (Assertion(expression="length(a)", operator="gt", expected=0), "length(a): In function length()"),
    ],
)
def test_a_failing_assertion_fails_alone(context: CheckContext, bad: Assertion, fragment: str) -> None:
    result = _check(context, bad)
    assert result.score == pytest.approx(2 / 3) and result.error is None
    entries = result.details["assertions"]
    assert [entry["passed"] for entry in entries] == [True, False, True]
    assert fragment in entries[1]["error"]
    assert "error" not in entries[0] and "error" not in entries[2]


def test_a_schema_pattern_that_backtracks_without_bound_stops_at_the_deadline(
    context: CheckContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The schema may be the agent's: ``(a|aa)+c`` over 60 characters would run for days under ``re``."""
    from coder_eval_dagster.core import patterns

    search = patterns.search
    monkeypatch.setattr(patterns, "search", lambda p, text: search(p, text, seconds=0.5))
    box = context.sandbox.root
    (box / "d.json").write_text(json.dumps({"s": "a" * 60, "k": {"bb": 1}}))
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "(a|aa)+c"}}}
    (box / "slow.json").write_text(json.dumps(schema))
    fine = {"properties": {"s": {"pattern": "^a+$"}}, "patternProperties": {"^k$": {"required": ["aa"]}}}
    (box / "fine.json").write_text(json.dumps(fine))

    def graded(schema_file: str, data_file: str = "d.json") -> Any:
        spec = {"type": "json_check", "description": "d", "path": data_file, "json_schema": schema_file}
        parsed = TypeAdapter(criterion_union()).validate_python(spec)
        return criterion_result(0, parsed, run_check(parsed, context), None)

    # additionalProperties matches the property names too: under re, ^(a+)+$ over 32 characters and a "!" takes
    # minutes (the regex package sees at once that it cannot match)
    beside = {"patternProperties": {"^(a+)+$": {}}, "additionalProperties": False}
    (box / "beside.json").write_text(json.dumps(beside))
    (box / "keyed.json").write_text(json.dumps({"a" * 32 + "!": 1}))
    keyed = graded("beside.json", "keyed.json")
    assert keyed.score == 0.0 and "does not match any of the regexes" in json.dumps(keyed.details), keyed
    both = {**beside, "unevaluatedProperties": False}
    (box / "both.json").write_text(json.dumps(both))
    refused = graded("both.json", "keyed.json")
    assert refused.score == 0.0 and "unevaluatedProperties with patternProperties" in (refused.error or ""), refused
    slow = graded("slow.json")
    assert slow.score == 0.0 and "did not finish within 0.5 s" in (slow.error or str(slow.details)), slow
    checked = graded("fine.json")  # a pattern that matches passes; patternProperties still apply
    assert checked.score == 0.0 and "'aa' is a required property" in json.dumps(checked.details), checked


UNIQUE_CASES = [
    [1, 1.0],
    [1, True],
    [0, False, None],
    [{"a": 1, "b": 2}, {"b": 2, "a": 1}],
    [[1, 2], [2, 1]],
    [[1, [True]], [1.0, [True]]],
    ["1", 1, {"x": "1"}, {"x": 1}],
    [{"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}],
    [],
]


@pytest.mark.parametrize("items", UNIQUE_CASES)
def test_unique_items_says_what_jsonschema_says(items: list[Any]) -> None:
    """The linear check calls the same arrays non-unique as jsonschema's own (1 and 1.0 equal, true and 1 not)."""
    import jsonschema

    from coder_eval_dagster.core.criteria.json_check import schema_errors

    schema = {"type": "array", "uniqueItems": True}
    expected = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(items)]
    assert schema_errors(schema, items) == expected


def test_unique_items_over_the_agents_objects_takes_one_pass() -> None:
    """jsonschema compares every pair of items it cannot sort: 8,000 objects took 84 s, 30,000 would take days."""
    import time

    from coder_eval_dagster.core.criteria.json_check import schema_errors

    items: list[Any] = [{"a": n} for n in range(30_000)]
    started = time.monotonic()
    assert schema_errors({"type": "array", "uniqueItems": True}, items) == []
    assert len(schema_errors({"uniqueItems": True}, [*items, {"a": 29_999}])) == 1
    assert time.monotonic() - started < 60  # (0.7 s; a loaded machine 6.7 s; the bug: days)
