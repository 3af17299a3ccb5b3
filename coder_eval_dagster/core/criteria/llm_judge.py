"""`llm_judge`: one model call grades the task against a rubric."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .judge_base import JudgeBase

DEFAULT_JUDGE_MODEL = "anthropic.claude-sonnet-4-6"


class LlmJudge(JudgeBase):
    type: Literal["llm_judge"]
    model: str = Field(default=DEFAULT_JUDGE_MODEL, min_length=1)
    temperature: float = Field(default=0.0, ge=0.0, le=1.0)
    max_tokens: int = Field(default=2000, ge=1)
