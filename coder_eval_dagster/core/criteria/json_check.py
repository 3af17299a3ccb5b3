"""`json_check`: valid JSON, optional JSON Schema, JMESPath assertions."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import Field, field_validator, model_validator

from ..models.base import StrictModel, rule_error
from .base import CriterionBase, Scoring

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
    scoring: ClassVar[Scoring] = "fractional"
    type: Literal["json_check"]
    path: str = Field(min_length=1)
    json_schema: str | None = None
    assertions: list[Assertion] = Field(default_factory=list)
