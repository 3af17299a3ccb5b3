"""`skill_triggered`: did the agent engage the target skill (labels yes / no)?"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ..results import ToolCallRecord
from .base import Classification, LiveObservable, Scoring
from .context import CheckContext, Outcome


class SkillTriggered(LiveObservable, Classification):
    scoring: ClassVar[Scoring] = "binary"
    type: Literal["skill_triggered"]
    skill_name: str = Field(min_length=1)
    expected_skill: str

    def metric_labels(self) -> list[str] | None:
        return ["yes", "no"]


def engaged(skill_name: str, call: ToolCallRecord) -> bool:
    """A Skill call naming the skill (namespace stripped), or a read under skills/<name>/."""
    if call.tool == "Skill":
        named = str(call.parameters.get("skill", "")).rsplit(":", 1)[-1]
        if named == skill_name:
            return True
    marker = f"skills/{skill_name}/"
    return any(marker in str(value) for value in call.parameters.values())


def expected_label(criterion: SkillTriggered) -> str:
    return "yes" if criterion.expected_skill == criterion.skill_name else "no"


def check(criterion: SkillTriggered, ctx: CheckContext) -> Outcome:
    expected = expected_label(criterion)
    if not ctx.trajectory:
        return Outcome(
            0.0, error="no agent turn records: skill_triggered needs a real agent run", expected_label=expected
        )
    observed = "yes" if any(engaged(criterion.skill_name, c) for c in ctx.calls) else "no"
    details = {"skill_name": criterion.skill_name, "observed": observed, "expected": expected}
    return Outcome(1.0 if observed == expected else 0.0, details, expected_label=expected, observed_label=observed)


# Live verdicts for the early-stop watcher (see core/early_stop.py): a positive
# row can only live-pass (the skill fires), a distractor row only live-fail.


def can_live_pass(criterion: SkillTriggered) -> bool:
    return expected_label(criterion) == "yes"


def can_live_fail(criterion: SkillTriggered) -> bool:
    return expected_label(criterion) == "no"


def live_hit(criterion: SkillTriggered, call: ToolCallRecord) -> bool:
    return engaged(criterion.skill_name, call)


def live_verdict(criterion: SkillTriggered, hits: int) -> str | None:
    """The verdict once the skill has engaged ``hits`` times (None: undecided)."""
    if hits:
        return "pass" if can_live_pass(criterion) else "fail"
    return None
