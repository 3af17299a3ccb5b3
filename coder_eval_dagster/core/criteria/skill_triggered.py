"""`skill_triggered`: did the agent engage the target skill (labels yes / no)?"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from ..models.criterion import Classification, LiveObservable
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext
    from ..models.results import ToolCallRecord


class SkillTriggered(LiveObservable, Classification):
    type: Literal["skill_triggered"]
    skill_name: str = Field(min_length=1)
    expected_skill: str

    def metric_labels(self) -> list[str] | None:
        return ["yes", "no"]

    def label_space(self) -> list[str]:
        return ["yes", "no"]

    def expected(self) -> str:
        return "yes" if self.expected_skill == self.skill_name else "no"

    # A positive row can only live-pass (the skill fires), a distractor row only live-fail.
    def can_live_pass(self) -> bool:
        return self.expected() == "yes"

    def can_live_fail(self) -> bool:
        return self.expected() == "no"

    def live_hit(self, call: ToolCallRecord) -> bool:
        return engaged(self.skill_name, call)

    def live_verdict(self, hits: int) -> Literal["pass", "fail"] | None:
        if hits:
            return "pass" if self.can_live_pass() else "fail"
        return None


def engaged(skill_name: str, call: ToolCallRecord) -> bool:
    """A successful Skill call naming the skill (namespace stripped), or a call with a text parameter under
    ``skills/<name>/`` (coder_eval's pattern: either separator, repeated: ``skills//x/``, ``skills\\x\\``).

    A Skill call that failed (an unknown skill, one the variant did not offer) brought nothing to the agent, so it
    does not count. A read of the skill's files counts whether it succeeded or not, as the guide reads it ("a
    command that reads the skill's files off disk") and coder_eval counts it: an ``ls`` of a skill folder that is
    not there is the agent reaching for the skill, which coder_eval's own probe tasks rely on.
    """
    if call.tool == "Skill" and str(call.parameters.get("skill", "")).rsplit(":", 1)[-1] == skill_name:
        return call.status == "success"
    under = re.compile(rf"skills[\\/]+{re.escape(skill_name)}[\\/]+")
    return any(isinstance(value, str) and under.search(value) for value in call.parameters.values())


@checks(SkillTriggered)
def check(criterion: SkillTriggered, ctx: CheckContext) -> Outcome:
    expected = criterion.expected()
    if not ctx.trajectory:
        return Outcome(
            0.0, error="no agent turn records: skill_triggered needs a real agent run", expected_label=expected
        )
    observed = "yes" if any(engaged(criterion.skill_name, c) for c in ctx.calls) else "no"
    details = {"skill_name": criterion.skill_name, "observed": observed, "expected": expected}
    return Outcome(1.0 if observed == expected else 0.0, details, expected_label=expected, observed_label=observed)
