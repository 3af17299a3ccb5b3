"""`dataset`: fan one task out into one row-task per row."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from .base import StrictModel, rule_error, valid_file_name


class Dataset(StrictModel):
    rows: list[dict[str, Any]] | None = None
    paths: list[Annotated[str, AfterValidator(valid_file_name)]] | None = None
    id_field: str = Field(default="id", min_length=1)
    sample_per_stratum: int | None = Field(default=None, ge=1)
    stratify_field: str = Field(default="expected_skill", min_length=1)
    sample_seed: int | None = None
    split_field: str = Field(default="split", min_length=1)

    @model_validator(mode="after")
    def _exactly_one_source(self) -> Dataset:
        if (self.rows is None) == (self.paths is None):
            raise rule_error("rows", "exactly one of rows or paths is required")
        if self.paths is not None and not self.paths:
            raise rule_error("paths", "must list at least one JSONL file")
        return self
