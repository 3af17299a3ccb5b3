"""`reference_comparison`: similarity of the agent's file to the task's reference."""

from __future__ import annotations

import ast
import difflib
import re
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, PrivateAttr, model_validator

from ..files import read_text_beneath, truncation_note
from ..models.base import ReferencePath, SandboxPath
from ..models.criterion import CriterionBase
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext


class ReferenceComparison(CriterionBase):
    needs_agent: ClassVar[bool] = True
    type: Literal["reference_comparison"]
    agent_file: SandboxPath
    comparison_method: Literal["ast", "token", "complexity"] = "ast"
    similarity_threshold: float = Field(default=0.8, ge=0.0, le=1.0)
    reference_file: ReferencePath | None = None
    _overridden: float | None = PrivateAttr(default=None)  # an explicit pass_threshold the override set aside

    @model_validator(mode="after")
    def _passes_at_similarity_threshold(self) -> ReferenceComparison:
        """As coder_eval does: the domain field wins, so every result, its error paths included, records it."""
        if "pass_threshold" in self.model_fields_set and self.pass_threshold != self.similarity_threshold:
            self._overridden = self.pass_threshold
        self.pass_threshold = self.similarity_threshold
        return self

    def load_warnings(self) -> list[tuple[str, str]]:
        if self._overridden is None:
            return []
        why = (
            f"pass_threshold {self._overridden:g} is ignored: reference_comparison passes at its "
            f"similarity_threshold ({self.similarity_threshold:g}), as coder_eval does; set that instead"
        )
        return [("pass_threshold", why)]

    def reads_reference_dir(self) -> bool:
        return self.reference_file is not None


_TOKEN = re.compile(r"\w+|[^\w\s]")
_BRANCHES = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.IfExp,
    ast.ExceptHandler,
    ast.With,
    ast.AsyncWith,
    ast.Assert,
    ast.comprehension,
    ast.BoolOp,
    ast.match_case,
)


def _ratio(a: list[str], b: list[str]) -> float:
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(a=a, b=b).ratio()  # difflib's autojunk, as coder_eval: its thresholds fit it


def _ast_shape(code: str) -> list[str]:
    return [type(node).__name__ for node in ast.walk(ast.parse(code))]


def _complexity(code: str) -> int:
    """Cyclomatic complexity of the whole file: 1 + its decision points."""
    return 1 + sum(isinstance(node, _BRANCHES) for node in ast.walk(ast.parse(code)))


def similarity(method: str, agent_code: str, reference: str) -> float:
    if method == "ast":
        return _ratio(_ast_shape(agent_code), _ast_shape(reference))
    if method == "token":
        return _ratio(_TOKEN.findall(agent_code), _TOKEN.findall(reference))
    ours, theirs = _complexity(agent_code), _complexity(reference)
    return 1.0 - abs(ours - theirs) / max(ours, theirs)


def _reference(criterion: ReferenceComparison, ctx: CheckContext) -> str | None:
    """The reference code: a file of the reference folder (``reference_file``), else the task's reference. The
    staged folder is walked from its root, never through a link out of it, regular files only: a process left
    running in the sandbox's namespace may swap the file for a link or a FIFO while the criteria read."""
    if criterion.reference_file is None or ctx.reference_dir is None:
        return ctx.reference
    folder = ctx.reference_dir.resolve()
    return read_text_beneath(folder, criterion.reference_file, root_name="the reference folder")[0]


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


@checks(ReferenceComparison)
def check(criterion: ReferenceComparison, ctx: CheckContext) -> Outcome:
    reference = _reference(criterion, ctx)
    if reference is None:
        return Outcome(0.0, error="the task has no reference")
    try:
        path, resolved = ctx.resolve_file(criterion.agent_file)  # a glob naming one file, as coder_eval's
    except FileNotFoundError as exc:
        return Outcome(0.0, {"method": criterion.comparison_method}, error=str(exc))
    agent_code, truncated = ctx.read_text(path)
    note = resolved | truncation_note(path, truncated)
    try:
        score = similarity(criterion.comparison_method, agent_code, reference)
    except SyntaxError as exc:
        which = "the reference" if _parses(agent_code) else path
        where = f" (line {exc.lineno})" if exc.lineno is not None else ""
        error = f"cannot parse {which} as Python: {exc.msg}{where}"
        return Outcome(0.0, {"method": criterion.comparison_method, **note}, error=error)
    details = {"method": criterion.comparison_method, "similarity": round(score, 4), **note}
    return Outcome(score, details)
