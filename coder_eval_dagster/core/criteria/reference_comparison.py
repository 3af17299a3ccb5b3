"""`reference_comparison`: similarity of the agent's file to the task's reference."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import CriterionBase, Scoring


class ReferenceComparison(CriterionBase):
    scoring: ClassVar[Scoring] = "continuous"
    needs_agent: ClassVar[bool] = True
    type: Literal["reference_comparison"]
    agent_file: str = Field(min_length=1)
    comparison_method: Literal["ast", "token", "complexity"] = "ast"
    similarity_threshold: float = Field(default=0.8, ge=0.0, le=1.0)
