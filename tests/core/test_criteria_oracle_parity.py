"""`json_check` and `cli_called` where a differential run against coder_eval 0.12.16 found us apart.

json_check: the schema's draft is the one its ``$schema`` names (coder_eval's ``jsonschema.validate``), not
always 2020-12; ``json_schema`` may be a glob matching exactly one file, as ``path`` may. cli_called: a blank
verb, a verb token that is a flag and a criterion with nothing to match on are refused at load (coder_eval
refuses them), each naming its file, line and field, for each row when a ``${row.x}`` fills the verb in.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from coder_eval_dagster.core.check_context import CheckContext
from coder_eval_dagster.core.criteria.cli_called import CliCalled
from coder_eval_dagster.core.criteria.json_check import schema_errors
from coder_eval_dagster.core.models.sandbox import CliMatch, SandboxConfig
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox

from ..support.helpers import check_criterion, criterion, run_cli, task_with, write_task

DRAFT_04 = "http://json-schema.org/draft-04/schema#"
# draft-04's boolean exclusiveMaximum: 2020-12's metaschema refuses it (a number there)
BELOW_TEN = {
    "$schema": DRAFT_04,
    "definitions": {"n": {"type": "number", "maximum": 10, "exclusiveMaximum": True}},
    "type": "object",
    "properties": {"n": {"$ref": "#/definitions/n"}},
}


@pytest.fixture
def context(tmp_path: Path) -> CheckContext:
    box = TempdirSandbox(tmp_path / "sandbox", SandboxConfig(python=None))
    box.root.mkdir()
    return CheckContext(box, tmp_path, None, None, run=RunContext.create())


def put(context: CheckContext, relative: str, value: Any) -> None:
    target = context.sandbox.root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(value if isinstance(value, str) else json.dumps(value))


# ----------------------------------------------------------------------------- json_check: the schema's draft


def test_a_draft_04_schema_is_validated_as_draft_04(context: CheckContext) -> None:
    put(context, "schemas/s.json", BELOW_TEN)
    put(context, "ok.json", {"n": 5})
    put(context, "over.json", {"n": 10})
    spec = {"type": "json_check", "json_schema": "schemas/s.json"}
    ok = check_criterion({**spec, "path": "ok.json"}, context)
    assert (ok.score, ok.error, ok.details["schema_errors"]) == (1.0, None, [])
    over = check_criterion({**spec, "path": "over.json"}, context)
    assert over.score == 0.0 and over.error is None
    assert over.details["schema_errors"] == ["10 is greater than or equal to the maximum of 10"]


@pytest.mark.parametrize(
    ("schema", "data", "errors"),
    [
        # draft-07: exclusiveMaximum is a number
        (
            {"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"n": {"exclusiveMaximum": 10}}},
            {"n": 10},
            ["10 is greater than or equal to the maximum of 10"],
        ),
        # no $schema, or one jsonschema does not know: 2020-12 (prefixItems is 2020-12's)
        ({"prefixItems": [{"type": "string"}]}, [1], ["1 is not of type 'string'"]),
        (
            {"$schema": "https://example.com/mine", "prefixItems": [{"type": "string"}]},
            [1],
            ["1 is not of type 'string'"],
        ),
        # draft-04 does not know prefixItems: nothing to fail
        ({"$schema": DRAFT_04, "prefixItems": [{"type": "string"}]}, [1], []),
    ],
)
def test_the_draft_is_the_one_schema_names(schema: dict[str, Any], data: Any, errors: list[str]) -> None:
    assert schema_errors(schema, data) == errors


@pytest.mark.parametrize("schema", [5, "x", [1], {"$schema": 5}, {"$schema": ["a"]}])
def test_a_schema_that_is_no_schema_is_a_schema_error(schema: Any) -> None:
    from jsonschema import SchemaError

    with pytest.raises(SchemaError):
        schema_errors(schema, {})


def test_a_draft_04_schema_still_follows_no_outside_reference(context: CheckContext) -> None:
    put(context, "d.json", {"a": 1})
    put(context, "s.json", {"$schema": DRAFT_04, "properties": {"a": {"$ref": "file:///etc/hostname"}}})
    result = check_criterion({"type": "json_check", "path": "d.json", "json_schema": "s.json"}, context)
    assert result.score == 0.0
    assert result.error is not None and result.error.startswith("schema s.json: ")
    assert "(only references inside the schema are followed)" in result.error


def test_a_metaschema_error_keeps_its_message(context: CheckContext) -> None:
    put(context, "d.json", {"n": 1})
    put(context, "s.json", {"properties": {"n": {"type": "number", "exclusiveMaximum": True}}})  # no $schema: 2020-12
    result = check_criterion({"type": "json_check", "path": "d.json", "json_schema": "s.json"}, context)
    assert result.score == 0.0
    assert result.error is not None and result.error.startswith("schema s.json: True is not of type 'number'")


# ----------------------------------------------------------------------------- json_check: a glob json_schema


def test_a_json_schema_glob_matching_one_file_is_read_and_named(context: CheckContext) -> None:
    put(context, "schemas/v1.json", BELOW_TEN)
    put(context, "d.json", {"n": 5})
    result = check_criterion({"type": "json_check", "path": "d.json", "json_schema": "schemas/*.json"}, context)
    assert (result.score, result.error) == (1.0, None)
    assert result.details["schema_resolved"] == "schemas/v1.json"
    literal = check_criterion({"type": "json_check", "path": "d.json", "json_schema": "schemas/v1.json"}, context)
    assert literal.score == 1.0 and "schema_resolved" not in literal.details


def test_a_json_schema_glob_matching_none_or_several_scores_0(context: CheckContext) -> None:
    put(context, "d.json", {"n": 5})
    spec = {"type": "json_check", "path": "d.json", "json_schema": "schemas/*.json"}
    none = check_criterion(spec, context)
    assert (none.score, none.error) == (0.0, "no file matches 'schemas/*.json' in the sandbox")
    put(context, "schemas/a.json", BELOW_TEN)
    put(context, "schemas/b.json", BELOW_TEN)
    several = check_criterion(spec, context)
    assert several.score == 0.0 and several.error == (
        "'schemas/*.json' matches 2 files; refusing to guess which to grade: schemas/a.json, schemas/b.json"
    )


# ----------------------------------------------------------------------------- cli_called: refused at load


def _validate(folder: Path, *criteria: dict[str, Any], **changes: Any) -> Any:
    task = task_with(success_criteria=list(criteria), **changes)
    return run_cli("validate", write_task(folder, task))


def _cli(**fields: Any) -> dict[str, Any]:
    return criterion("cli_called", log="calls.jsonl", **fields)


BLANK = "must not be blank: a blank verb is an empty prefix and matches every invocation"
FLAG = "verb token '--all' looks like a flag. A verb matches only the non-flag arguments"


@pytest.mark.parametrize(
    ("fields", "field", "fragment"),
    [
        ({"verb": "", "positional": ["x"]}, "verb", BLANK),
        ({"verb": "   ", "tool": "uip"}, "verb", BLANK),
        ({"verb": [], "tool": "uip"}, "verb", BLANK),
        ({"verb": "del --all", "min_count": 0, "max_count": 0}, "verb", FLAG),
        ({"verb": ["del", "--all"]}, "verb", FLAG),
        ({"verb": "rm -f"}, "verb", "verb token '-f' looks like a flag"),
        ({"verb": "run -- x"}, "verb", "verb token '--' looks like a flag"),
        ({"verb": "set --model=x"}, "verb", "e.g. flags: {model: {present: true}}"),
        ({"verb_any_of": ["list", "del --all"]}, "verb_any_of.1", FLAG),
        ({"verb": "", "verb_any_of": ["list"]}, "verb_any_of", "set verb or verb_any_of, not both"),
        ({}, "", "cli_called requires at least one of verb / verb_any_of / positional / flags / tool"),
        ({"min_count": 0, "max_count": 0, "value_flags": ["f"]}, "", "with none, every call in the log matches"),
    ],
)
def test_a_verb_or_pattern_that_cannot_mean_what_it_says_is_refused(
    tmp_path: Path, fields: dict[str, Any], field: str, fragment: str
) -> None:
    result = _validate(tmp_path, _cli(**fields))
    assert result.code == 1, result.err
    named = "success_criteria.0" + (f".{field}" if field else "")
    assert re.search(rf"task\.yaml:\d+: {re.escape(named)}: [^\n]*{re.escape(fragment)}", result.err), result.err


@pytest.mark.parametrize(
    "fields",
    [
        {"tool": "uip"},  # every call of one tool
        {"exact_positional": True},  # a call with no positional
        {"verb": None, "flags": {"all": {"present": True}}},
        {"verb": "cat -"},  # '-' is stdin, a positional
        {"verb": "del", "flags": {"all": {"present": True}}, "min_count": 0, "max_count": 0},
    ],
)
def test_a_pattern_that_says_something_loads(tmp_path: Path, fields: dict[str, Any]) -> None:
    result = _validate(tmp_path, _cli(**fields))
    assert result.code == 0, result.err


def test_the_flag_in_flags_guards_what_the_flag_in_the_verb_never_could(context: CheckContext) -> None:
    put(context, "calls.jsonl", json.dumps({"tool": "uip", "argv": ["del", "--all"], "exit": 0}) + "\n")
    guard = {"type": "cli_called", "log": "calls.jsonl", "verb": "del", "min_count": 0, "max_count": 0}
    result = check_criterion({**guard, "flags": {"all": {"present": True}}}, context)
    assert (result.score, result.details["matches"]) == (0.0, 1)
    with pytest.raises(ValidationError, match="looks like a flag"):
        CliCalled.model_validate({**guard, "type": "cli_called", "description": "d", "verb": "del --all"})


def test_a_record_cli_rule_gets_the_same_verb_rules(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="verb token '--all' looks like a flag"):
        CliMatch.model_validate({"verb": "del --all"})
    with pytest.raises(ValidationError, match="must not be blank"):
        CliMatch.model_validate({"verb": "", "positional": ["x"]})
    assert CliMatch.model_validate({"verb": "del", "flags": {"all": {"present": True}}}).verbs == [["del"]]


def test_a_verb_a_row_fills_in_is_checked_for_that_row(tmp_path: Path) -> None:
    rows = [{"id": "r1", "verb": "list"}, {"id": "r2", "verb": ""}, {"id": "r3", "verb": "del --all"}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = _validate(tmp_path, _cli(verb="${row.verb}"), dataset={"paths": ["rows.jsonl"]})
    assert result.code == 1, result.err
    assert re.search(rf"success_criteria\.0\.verb: {re.escape(BLANK)}.*row 'r2'", result.err), result.err
    assert re.search(rf"success_criteria\.0\.verb: {re.escape(FLAG)}.*row 'r3'", result.err), result.err
    assert "row 'r1'" not in result.err, result.err
