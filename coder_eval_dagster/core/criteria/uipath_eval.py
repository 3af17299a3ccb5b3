"""`uipath_eval`: a UiPath agent's evaluation set must meet metric thresholds."""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ..files import truncation_note
from .base import CriterionBase
from .context import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext

EVAL_TIMEOUT_S = 1800


class UipathEval(CriterionBase):
    type: Literal["uipath_eval"]
    agent_name: str = Field(min_length=1)
    eval_set: str = Field(min_length=1)
    thresholds: dict[str, float] = Field(min_length=1)


RESULTS_FILE = ".coder-eval-uipath-eval.json"


def _metrics(data: dict[str, Any]) -> dict[str, float]:
    source = data.get("metrics", data)
    return {k: float(v) for k, v in source.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


@checks(UipathEval)
def check(criterion: UipathEval, ctx: CheckContext) -> Outcome:
    """Run `uipath eval` in the sandbox and compare its metrics with the thresholds.

    The CLI must be installed in the sandbox (the task's own python deps); its
    results file is read as ``{metric: value}`` or ``{"metrics": {...}}``.
    """
    names = f"{shlex.quote(criterion.agent_name)} {shlex.quote(criterion.eval_set)}"
    command = f"uipath eval {names} --output-file {RESULTS_FILE}"
    run = ctx.sandbox.run(command, EVAL_TIMEOUT_S)
    if not run.ok:
        return Outcome(0.0, {"stderr": run.stderr[-2000:]}, error=run.error or f"uipath eval exited {run.exit_code}")
    text, truncated = ctx.read_text(RESULTS_FILE)
    metrics = _metrics(json.loads(text))
    verdicts = {name: metrics.get(name, float("-inf")) >= minimum for name, minimum in criterion.thresholds.items()}
    details = {"metrics": metrics, "passed": verdicts, **truncation_note(RESULTS_FILE, truncated)}
    return Outcome(sum(verdicts.values()) / len(verdicts), details)
