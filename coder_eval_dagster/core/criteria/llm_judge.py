"""`llm_judge`: one model call grades the task against a rubric."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from .context import Outcome
from .judge_base import JudgeBase
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext

DEFAULT_JUDGE_MODEL = "anthropic.claude-sonnet-4-6"


class LlmJudge(JudgeBase):
    type: Literal["llm_judge"]
    model: str = Field(default=DEFAULT_JUDGE_MODEL, min_length=1)
    temperature: float = Field(default=0.0, ge=0.0, le=1.0)
    max_tokens: int = Field(default=2000, ge=1)


@checks(LlmJudge)
def check(criterion: LlmJudge, ctx: CheckContext) -> Outcome:
    return Outcome(0.0, error="llm_judge is not available in this release of coder-eval (no judge transport yet)")
