"""`classification_match`: the label the agent wrote to a file vs. ground truth."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import Classification, Scoring

NONE_LABEL = "(none)"
OTHER_LABEL = "(other)"


class ClassificationMatch(Classification):
    scoring: ClassVar[Scoring] = "binary"
    type: Literal["classification_match"]
    path: str = Field(min_length=1)
    expected_label: str
    allowed_labels: list[str] = Field(min_length=1)
    case_sensitive: bool = False

    def metric_labels(self) -> list[str] | None:
        return [*self.allowed_labels, NONE_LABEL, OTHER_LABEL]
