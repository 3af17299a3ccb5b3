"""The `echo_says` criterion: echo.txt holds the given text; `spins`: a check computing in Python for its `seconds`
(both registered by importing this module)."""

from __future__ import annotations

import time
from typing import Literal

from coder_eval_dagster.core.check_context import CheckContext
from coder_eval_dagster.core.criteria.outcome import Outcome
from coder_eval_dagster.core.criteria.registry import checks
from coder_eval_dagster.core.models.criterion import CriterionBase


class EchoSays(CriterionBase):
    type: Literal["echo_says"]
    text: str


@checks(EchoSays)
def check(criterion: EchoSays, ctx: CheckContext) -> Outcome:
    said = ctx.read_text("echo.txt")[0] if ctx.path("echo.txt").is_file() else None
    return Outcome(1.0 if said == criterion.text else 0.0, {"said": said})


class Spins(CriterionBase):
    type: Literal["spins"]
    seconds: float


@checks(Spins)
def spin(criterion: Spins, ctx: CheckContext) -> Outcome:
    """Busy in the harness's own thread, as a check computing over a large file is: no command to stop."""
    deadline = time.monotonic() + criterion.seconds
    while time.monotonic() < deadline:
        pass
    return Outcome(1.0, {})
