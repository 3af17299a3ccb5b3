"""`skill_triggered`: did the agent engage the target skill (labels yes / no)?"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import Classification, LiveObservable, Scoring


class SkillTriggered(LiveObservable, Classification):
    scoring: ClassVar[Scoring] = "binary"
    type: Literal["skill_triggered"]
    skill_name: str = Field(min_length=1)
    expected_skill: str

    def metric_labels(self) -> list[str] | None:
        return ["yes", "no"]
