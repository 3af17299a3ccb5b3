"""`uipath_eval`: a UiPath agent's evaluation set must meet metric thresholds."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import CriterionBase, Scoring


class UipathEval(CriterionBase):
    scoring: ClassVar[Scoring] = "fractional"
    type: Literal["uipath_eval"]
    agent_name: str = Field(min_length=1)
    eval_set: str = Field(min_length=1)
    thresholds: dict[str, float] = Field(min_length=1)
