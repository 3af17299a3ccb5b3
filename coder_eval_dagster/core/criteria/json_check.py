"""`json_check`: valid JSON, optional JSON Schema, JMESPath assertions."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Literal

import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import Field, field_validator, model_validator

from ..models.base import StrictModel, rule_error
from .base import CriterionBase
from .context import Outcome, fraction, mean
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext

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


class JsonCheck(CriterionBase):
    type: Literal["json_check"]
    path: str = Field(min_length=1)
    json_schema: str | None = None
    assertions: list[Assertion] = Field(default_factory=list)


JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _is_type(value: Any, name: Any) -> bool:
    kinds = JSON_TYPES.get(str(name))
    if kinds is None:
        raise ValueError(f"unknown JSON type {name!r}; use one of {', '.join(JSON_TYPES)}")
    if isinstance(value, bool) and bool not in kinds:
        return False
    return isinstance(value, kinds)


def _compare(operator: str, value: Any, expected: Any) -> bool:
    match operator:
        case "equals":
            return value == expected
        case "not_equals":
            return value != expected
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
            return isinstance(value, str) and re.search(str(expected), value) is not None
        case "exists":
            return value is not None
    raise ValueError(f"unknown operator {operator}")


def evaluate_assertion(assertion: Assertion, data: Any) -> tuple[bool, str | None]:
    value = jmespath.search(assertion.expression, data)
    try:
        return _compare(assertion.operator, value, assertion.expected), None
    except (TypeError, ValueError) as exc:
        return False, f"{assertion.expression}: {exc}"


@checks(JsonCheck)
def check(criterion: JsonCheck, ctx: CheckContext) -> Outcome:
    try:
        data = json.loads(ctx.read_text(criterion.path))
    except json.JSONDecodeError as exc:
        return Outcome(0.0, {"valid_json": False}, error=f"invalid JSON in {criterion.path}: {exc}")
    scores: list[float] = []
    details: dict[str, Any] = {"valid_json": True}
    if criterion.json_schema:
        schema = json.loads(ctx.read_text(criterion.json_schema))
        import jsonschema  # only when a schema is checked: a tenth of a second of every start-up otherwise

        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=str)
        scores.append(0.0 if errors else 1.0)
        details["schema_errors"] = [e.message for e in errors[:20]]
    if criterion.assertions:
        results = [evaluate_assertion(a, data) for a in criterion.assertions]
        details["assertions"] = [
            {"expression": a.expression, "operator": a.operator, "passed": ok, **({"error": err} if err else {})}
            for a, (ok, err) in zip(criterion.assertions, results, strict=True)
        ]
        scores.append(fraction(sum(ok for ok, _ in results), len(results)))
    return Outcome(mean(scores), details)
