"""`file_matches_regex`: the file content matches (or must not match) a pattern."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from .. import patterns
from ..files import truncation_note
from ..models.base import SandboxPath, StrictModel, check_regex, check_regex_flags, rule_error
from ..models.criterion import CriterionBase
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext


class RegexSpec(StrictModel):
    """A pattern that must (or must not) match, with ``re`` flags; compiled at load."""

    pattern: str
    must_match: bool = True
    flags: Annotated[int, Field(ge=0), AfterValidator(check_regex_flags)] = 0

    @model_validator(mode="after")
    def _compiles(self) -> RegexSpec:
        try:
            check_regex(self.pattern, self.flags)
        except ValueError as exc:
            raise rule_error("pattern", str(exc)) from None
        return self

    def found_in(self, content: str) -> bool:
        return patterns.search(self.pattern, content, self.flags)

    def verdict(self, found: bool, whole: bool) -> bool:
        """Whether the rule holds; a must-not-match rule cannot hold over a file read only in part (``whole``
        False): the match it forbids could be in the part not read, e.g. a file padded past the read cap."""
        return found if self.must_match else not found and whole

    def holds(self, content: str, whole: bool = True) -> bool:
        return self.verdict(self.found_in(content), whole)


class FileMatchesRegex(CriterionBase, RegexSpec):
    type: Literal["file_matches_regex"]
    path: SandboxPath


@checks(FileMatchesRegex)
def check(criterion: FileMatchesRegex, ctx: CheckContext) -> Outcome:
    path, resolved = ctx.resolve_file(criterion.path)
    content, truncated = ctx.read_text(path)
    found = criterion.found_in(content)
    details = {"matched": found, "must_match": criterion.must_match}
    passed = criterion.verdict(found, whole=not truncated)
    return Outcome(1.0 if passed else 0.0, resolved | details | truncation_note(path, truncated))
