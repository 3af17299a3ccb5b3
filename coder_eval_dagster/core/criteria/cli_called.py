"""`cli_called`: a recorded CLI invocation matched argv element by element."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from .. import patterns
from ..argv_match import matches
from ..files import CRITERION_READ_CAP, truncation_note
from ..models.base import SandboxPath, rule_error
from ..models.cli_match import ArgvPattern
from ..models.criterion import CriterionBase
from ..models.sandbox import RECORD_CLI_LOG
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext


NEVER_FAILS = (
    "cli_called with min_count: 0 and no max_count can never fail. Set max_count: 0 for a negative guard, "
    "or raise min_count for a positive assertion."
)

NO_FACET = (
    "cli_called requires at least one of verb / verb_any_of / positional / flags / tool to match on "
    "(or exact_positional: true): with none, every call in the log matches"
)


class CliCalled(CriterionBase, ArgvPattern):
    type: Literal["cli_called"]
    log: SandboxPath = RECORD_CLI_LOG  # where the record_cli shims write
    tool: str | None = None
    min_count: int = Field(default=1, ge=0)
    max_count: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _counts(self) -> CliCalled:
        if self.min_count == 0 and self.max_count is None:  # every log passes it (coder_eval refuses it too)
            raise rule_error("min_count", NEVER_FAILS)
        if self.max_count is not None and self.max_count < self.min_count:
            raise rule_error("max_count", f"must be >= min_count ({self.min_count})")
        if not (self.verb or self.verb_any_of or self.positional or self.flags or self.tool or self.exact_positional):
            raise rule_error("", NO_FACET)  # it would count every record of the log (coder_eval refuses it too)
        return self


def read_log(ctx: CheckContext, relative: str) -> tuple[list[dict[str, Any]], bool]:
    """Every record of the log, and whether it was cut at the read cap; an unusable line fails the check.

    A log cut at the cap loses its last, partial line. Lines end at ``\n`` only: JSON keeps U+2028 or U+0085
    raw in a string (``ensure_ascii=False``, node's ``JSON.stringify``), where ``splitlines`` would cut it.
    """
    text, truncated = ctx.read_text(relative)
    lines = text.split("\n")[:-1] if truncated else text.split("\n")
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise ValueError(f"{relative}:{number}: not JSON") from None
        if not isinstance(record, dict):
            raise ValueError(f"{relative}:{number}: not a JSON object")
        argv = record.get("argv")
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise ValueError(f"{relative}:{number}: argv is not a list of strings")
        records.append(record)
    return records, truncated


@checks(CliCalled)
def check(criterion: CliCalled, ctx: CheckContext) -> Outcome:
    records, truncated = read_log(ctx, criterion.log)
    spec = criterion.spec()
    tool = criterion.tool
    called = [r for r in records if tool is None or r.get("tool") == tool]
    matched = [r["argv"] for r in called if matches(spec, r["argv"], patterns.search)]
    high = criterion.max_count
    passed = len(matched) >= criterion.min_count and (high is None or len(matched) <= high)
    details = {"records": len(records), "matches": len(matched), "matched_argv": matched[:20]}
    details |= truncation_note(criterion.log, truncated)
    if passed and truncated and high is not None:
        return Outcome(0.0, details, error=unproven_bound(criterion.log, high))
    return Outcome(1.0 if passed else 0.0, details)


def unproven_bound(log: str, high: int) -> str:
    """Why a log read only in part cannot pass a max_count: its unread part might hold the very calls the bound
    forbids (as an exclude over a file read in part is not passed either)."""
    return (
        f"{log} is larger than {CRITERION_READ_CAP} bytes and was read only in part: the rest could hold "
        f"matching calls, so max_count {high} is not proven"
    )
