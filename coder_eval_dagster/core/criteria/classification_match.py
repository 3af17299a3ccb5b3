"""`classification_match`: the label the agent wrote to a file vs. ground truth."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..files import truncation_note
from ..models.base import SandboxPath
from ..models.criterion import Classification
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext

NONE_LABEL = "(none)"
OTHER_LABEL = "(other)"
SENTINELS = (NONE_LABEL, OTHER_LABEL)  # what is observed when no allowed label is: a missing or empty file, other text


class ClassificationMatch(Classification):
    type: Literal["classification_match"]
    path: SandboxPath
    expected_label: str
    allowed_labels: list[str] = Field(min_length=1)
    case_sensitive: bool = False

    def metric_labels(self) -> list[str] | None:
        return [*self.allowed_labels, NONE_LABEL, OTHER_LABEL]

    def label_space(self) -> list[str]:
        return list(self.allowed_labels)

    def load_warnings(self) -> list[tuple[str, str]]:
        if "${" in self.expected_label or self.expected() in (*self.allowed_labels, *SENTINELS):
            return []  # a placeholder is judged per row, filled in; a sentinel is the answer "no label" or "another"
        allowed = ", ".join(self.allowed_labels)
        return [("expected_label", f"{self.expected_label!r} is not one of allowed_labels ({allowed}): never a match")]

    def expected(self) -> str:
        return canonical(self.expected_label, self) or self.expected_label.strip()


def normalize(label: str, case_sensitive: bool) -> str:
    label = label.strip()
    return label if case_sensitive else label.lower()


def canonical(label: str, criterion: ClassificationMatch) -> str | None:
    wanted = normalize(label, criterion.case_sensitive)
    return next((a for a in criterion.allowed_labels if normalize(a, criterion.case_sensitive) == wanted), None)


@checks(ClassificationMatch)
def check(criterion: ClassificationMatch, ctx: CheckContext) -> Outcome:
    try:
        path, resolved = ctx.resolve_file(criterion.path)
        content, truncated = ctx.read_text(path)
    except FileNotFoundError:
        path, resolved, content, truncated = criterion.path, {}, "", False
    observed = NONE_LABEL if not content.strip() else canonical(content, criterion) or OTHER_LABEL
    expected = criterion.expected()
    score = 1.0 if observed == expected else 0.0
    return Outcome(
        score,
        resolved | {"observed": observed, "expected": expected} | truncation_note(path, truncated),
        expected_label=expected,
        observed_label=observed,
    )
