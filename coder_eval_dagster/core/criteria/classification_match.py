"""`classification_match`: the label the agent wrote to a file vs. ground truth."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import Classification, Scoring
from .context import CheckContext, Outcome

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


def normalize(label: str, case_sensitive: bool) -> str:
    label = label.strip()
    return label if case_sensitive else label.lower()


def canonical(label: str, criterion: ClassificationMatch) -> str | None:
    wanted = normalize(label, criterion.case_sensitive)
    return next((a for a in criterion.allowed_labels if normalize(a, criterion.case_sensitive) == wanted), None)


def check(criterion: ClassificationMatch, ctx: CheckContext) -> Outcome:
    content = ctx.read_text(criterion.path) if ctx.path(criterion.path).is_file() else ""
    observed = NONE_LABEL if not content.strip() else canonical(content, criterion) or OTHER_LABEL
    expected = canonical(criterion.expected_label, criterion) or criterion.expected_label.strip()
    score = 1.0 if observed == expected else 0.0
    return Outcome(
        score, {"observed": observed, "expected": expected}, expected_label=expected, observed_label=observed
    )
