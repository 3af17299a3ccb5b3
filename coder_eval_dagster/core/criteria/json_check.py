"""`json_check`: valid JSON, optional JSON Schema, JMESPath assertions."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import Field, field_validator, model_validator

from .. import patterns
from ..files import truncation_note
from ..models.base import SandboxPath, StrictModel, check_regex, rule_error
from ..models.criterion import CriterionBase
from .outcome import Outcome, fraction, mean
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext

SHOWN_CHARS = 500  # an assertion's actual and expected values in the details, at most

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}

Operator = Literal["equals", "not_equals", "contains", "gt", "gte", "lt", "lte", "type", "regex", "exists"]


class Assertion(StrictModel):
    expression: str = Field(min_length=1)
    operator: Operator = "equals"
    expected: Any = None

    @field_validator("expression")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            jmespath.compile(value)
        except JMESPathError as exc:
            raise ValueError(f"invalid JMESPath expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _expected_given(self) -> Assertion:
        if self.operator != "exists" and "expected" not in self.model_fields_set:
            raise rule_error("expected", f"required for operator {self.operator}")
        return self

    @model_validator(mode="after")
    def _expected_valid(self) -> Assertion:
        """A ``regex`` pattern compiles and a ``type`` names a JSON type, at load: a broken one is a load error
        (like every regex field), not a 0 at run time. A ``${row.x}`` placeholder waits for the row's value:
        each row's criteria are validated again with it filled in."""
        expected = self.expected
        if self.operator not in ("regex", "type") or (isinstance(expected, str) and "${row." in expected):
            return self
        try:
            if self.operator == "type":
                _json_type(expected)
            elif isinstance(expected, str):
                check_regex(expected)
            else:  # coder_eval's re.search fails on it at run time; ours matched nothing, in silence
                raise ValueError(f"a regex is text: quote it ({json.dumps(str(expected))}), not {expected!r}")
        except ValueError as exc:
            raise rule_error("expected", str(exc)) from None
        return self


def _json_type(name: Any) -> tuple[type, ...]:
    """The Python types of a JSON type name; any other value is a ValueError naming the accepted ones."""
    kinds = JSON_TYPES.get(name) if isinstance(name, str) else None
    if kinds is None:
        raise ValueError(f"unknown JSON type {name!r}; use one of {', '.join(JSON_TYPES)}")
    return kinds


class JsonCheck(CriterionBase):
    type: Literal["json_check"]
    path: SandboxPath
    json_schema: SandboxPath | None = None
    assertions: list[Assertion] = Field(default_factory=list)


def _is_type(value: Any, name: Any) -> bool:
    kinds = _json_type(name)
    if isinstance(value, bool) and bool not in kinds:
        return False
    return isinstance(value, kinds)


def _compare(operator: str, value: Any, expected: Any) -> bool:
    match operator:
        case "equals":
            return bool(value == expected)
        case "not_equals":
            return bool(value != expected)
        case "contains":
            return value is not None and expected in value
        case "gt":
            return value is not None and value > expected
        case "gte":
            return value is not None and value >= expected
        case "lt":
            return value is not None and value < expected
        case "lte":
            return value is not None and value <= expected
        case "type":
            return _is_type(value, expected)
        case "regex":
            pattern = check_regex(str(expected))  # a row's value may fill it: compiled only now
            return isinstance(value, str) and patterns.search(str(pattern), value)
        case "exists":
            return value is not None
    raise ValueError(f"unknown operator {operator}")


def evaluate_assertion(assertion: Assertion, data: Any) -> tuple[bool, Any, str | None]:
    """(passed, the value the expression found, an error).

    Any error (a JMESPath function given the wrong type, an uncomparable pair, a pattern a row's value made
    invalid) fails this assertion alone: the others keep their results and the score stays passed / total.
    """
    value = None
    try:
        value = jmespath.search(assertion.expression, data)
        return _compare(assertion.operator, value, assertion.expected), value, None
    except Exception as exc:
        return False, value, f"{assertion.expression}: {exc}"


def _shown(value: Any) -> Any:
    """A value for the details: as is when small, else its JSON text clipped."""
    text = json.dumps(value, default=str)
    return value if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


def _assertion_details(assertion: Assertion, passed: bool, actual: Any, error: str | None) -> dict[str, Any]:
    details = {"expression": assertion.expression, "operator": assertion.operator, "passed": passed}
    details["actual"] = _shown(actual)
    if assertion.operator != "exists":
        details["expected"] = _shown(assertion.expected)
    return details | ({"error": error} if error else {})


def schema_errors(schema: Any, data: Any) -> list[str]:
    """Messages of the data's schema violations; ``$ref`` resolves only inside the schema.

    The draft is the one the schema's ``$schema`` names (draft 3 to 2020-12), else 2020-12, as coder_eval's
    ``jsonschema.validate`` picks it. The schema may be written by the agent: an empty registry means no
    reference reaches a host file (``file://``) or the network (``http://``).
    """
    import jsonschema  # here, not at import: a tenth of a second of every start-up otherwise
    from referencing import Registry

    cls: Any = jsonschema.Draft202012Validator
    if isinstance(schema, dict) and isinstance(schema.get("$schema"), str):  # else 2020-12 says what is wrong
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    if {"unevaluatedProperties", "patternProperties"} <= _keywords_in(schema):
        raise ValueError(
            "the schema combines unevaluatedProperties with patternProperties, whose property names jsonschema "
            "would match with no deadline (the schema may be the agent's): not checked"
        )
    validator = _with_deadlines(cls)(schema, registry=Registry())
    return [e.message for e in sorted(validator.iter_errors(data), key=str)]


def _keywords_in(schema: Any) -> set[str]:
    """Every key of every mapping in the schema, walked with a stack."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.update(key for key in node if isinstance(key, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _with_deadlines(cls: Any) -> Any:
    """``cls`` with the keywords that search the schema's regular expressions (``pattern``, ``patternProperties``,
    ``additionalProperties`` beside them) searching under the criteria's deadline (``patterns.search``): the schema
    may be the agent's, and ``re`` cannot be stopped (``(a|aa)+c`` over 60 characters runs for days); and
    ``uniqueItems`` in linear time (the data may be the agent's)."""
    import jsonschema

    def additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "object"):
            return
        named, wanted = schema.get("properties", {}), list(schema.get("patternProperties", {}))
        extras = [key for key in instance if key not in named and not any(patterns.search(p, key) for p in wanted)]
        if validator.is_type(allowed, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], allowed, path=extra)
        elif not allowed and extras:  # jsonschema's own messages
            shown = ", ".join(repr(extra) for extra in sorted(extras, key=str))
            if wanted:
                verb = "does" if len(extras) == 1 else "do"
                listed = ", ".join(repr(p) for p in sorted(wanted))
                yield jsonschema.ValidationError(f"{shown} {verb} not match any of the regexes: {listed}")
            else:
                verb = "was" if len(extras) == 1 else "were"
                yield jsonschema.ValidationError(f"Additional properties are not allowed ({shown} {verb} unexpected)")

    def pattern(validator: Any, wanted: str, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "string") and not patterns.search(wanted, instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {wanted!r}")

    def pattern_properties(validator: Any, properties: dict[str, Any], instance: Any, schema: Any) -> Any:
        if not validator.is_type(instance, "object"):
            return
        for wanted, subschema in properties.items():
            for key, value in instance.items():
                if patterns.search(wanted, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=wanted)

    def unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Any:
        if unique and validator.is_type(instance, "array") and not _all_different(instance):
            yield jsonschema.ValidationError(f"{instance!r} has non-unique elements")

    keywords = {
        "pattern": pattern,
        "patternProperties": pattern_properties,
        "additionalProperties": additional_properties,
        "uniqueItems": unique_items,
    }
    return jsonschema.validators.extend(cls, keywords)  # type: ignore[no-untyped-call]  # unannotated in its stubs


def _all_different(items: list[Any]) -> bool:
    """``uniqueItems`` in one pass: jsonschema compares every pair of items it cannot sort (objects; numbers beside
    strings), and 8,000 of the agent's objects took 84 s, 30,000 days."""
    seen: set[Any] = set()
    for item in items:
        key = _json_value(item)
        if key in seen:
            return False
        seen.add(key)
    return True


def _json_value(value: Any) -> Any:
    """A hashable value equal for items JSON Schema calls equal: 1 and 1.0 are, true and 1 are not; an object's
    key order does not count, an array's does."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_json_value(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _json_value(item)) for key, item in value.items()))
    return ("string", value)


def _load_json(ctx: CheckContext, relative: str) -> Any:
    """The file's JSON; a file cut at the read cap is said to be too large."""
    text, truncated = ctx.read_text(relative)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        why = f"{truncation_note(relative, True)['truncated']}" if truncated else str(exc)
        raise ValueError(f"invalid JSON in {relative}: {why}") from None


@checks(JsonCheck)
def check(criterion: JsonCheck, ctx: CheckContext) -> Outcome:
    path, resolved = ctx.resolve_file(criterion.path)
    try:
        data = _load_json(ctx, path)
    except ValueError as exc:
        return Outcome(0.0, {**resolved, "valid_json": False}, error=str(exc))
    scores: list[float] = []
    details: dict[str, Any] = {**resolved, "valid_json": True}
    if criterion.json_schema:
        schema_path, schema_resolved = ctx.resolve_file(criterion.json_schema)  # a glob, as `path` may be
        if schema_resolved:
            details["schema_resolved"] = schema_path
        schema = _load_json(ctx, schema_path)
        try:
            errors = schema_errors(schema, data)
        except Exception as exc:
            from jsonschema import SchemaError
            from referencing.exceptions import Unresolvable

            if not isinstance(exc, Unresolvable | SchemaError):
                raise
            message = f"schema {schema_path}: {exc}"
            if isinstance(exc, Unresolvable):
                message += " (only references inside the schema are followed)"
            return Outcome(0.0, details, error=message)
        scores.append(0.0 if errors else 1.0)
        details["schema_errors"] = errors[:20]
    if criterion.assertions:
        results = [evaluate_assertion(a, data) for a in criterion.assertions]
        details["assertions"] = [
            _assertion_details(a, *result) for a, result in zip(criterion.assertions, results, strict=True)
        ]
        scores.append(fraction(sum(ok for ok, _, _ in results), len(results)))
    return Outcome(mean(scores), details)
