"""The early-stop watcher: ends a run once its armed criteria decide the outcome.

A criterion is armed by its ``stop_early`` block (only skill_triggered and
command_executed have one); ``run_limits.stop_early: false`` disarms them
all. After every tool call the watcher:

1. latches each armed criterion's live verdict once it decides (pass/fail);
2. latches an effective fail for a pass-capable criterion still undecided
   after ``decide_within`` tool-call steps (``decision_budget_exceeded``);
3. fail-stops once the armed set's weighted ceiling (undecided or passed
   count 1, failed 0) can no longer reach ``stop_early_gate_threshold``,
   deferred while any pass-capable armed criterion is undecided;
4. pass-stops once the ``on_pass: stop`` subset's weighted floor (undecided
   count 0) meets the threshold, deferred while a pass-capable armed
   criterion outside that subset is undecided.

Triggers a criterion cannot decide on this row are inert: a distractor can
only live-fail, so its on_pass and decide_within do nothing; a positive row
can only live-pass. A bug in the watcher fails open: it is disabled and the
run goes on to its natural end.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from .models.criterion import LiveObservable
from .models.results import ToolCallRecord
from .models.task import Task

log = logging.getLogger(__name__)

FAILED, PASSED, TIMED_OUT = "failed", "passed", "decision_budget_exceeded"
REASON_FAIL, REASON_PASS = "criterion_failed", "criterion_passed"  # coder_eval's EarlyStopInfo.reason


@dataclass
class Armed:
    index: int
    criterion: LiveObservable
    weight: float
    pass_capable: bool
    fail_capable: bool
    stop_on_pass: bool
    decide_within: int | None
    hits: int = 0  # calls so far that the criterion counts
    verdict: str | None = None  # latched: passed, failed, or decision_budget_exceeded

    @property
    def failed(self) -> bool:
        return self.verdict in (FAILED, TIMED_OUT)


@dataclass
class Watcher:
    armed: list[Armed]
    threshold: float
    steps: int = 0  # tool calls observed, cumulative
    fired: str | None = None
    disabled: bool = False

    @classmethod
    def for_task(cls, task: Task) -> Watcher | None:
        """A watcher when the task has armed criteria and no kill switch, else None."""
        if not task.armed:
            return None
        armed = []
        for index, criterion in enumerate(task.success_criteria):
            # Only a LiveObservable has a stop_early block (the format's placement rule).
            if not isinstance(criterion, LiveObservable) or criterion.stop_early is None:
                continue
            block = criterion.stop_early
            pass_capable = criterion.can_live_pass()
            armed.append(
                Armed(
                    index=index,
                    criterion=criterion,
                    weight=criterion.weight,
                    pass_capable=pass_capable,
                    fail_capable=criterion.can_live_fail(),
                    stop_on_pass=pass_capable and block.on_pass == "stop",
                    decide_within=block.decide_within if pass_capable else None,
                )
            )
        return cls(armed, task.run_limits.stop_early_gate_threshold)

    def observe(self, call: ToolCallRecord) -> str | None:
        """Take one completed tool call; the stop reason when the watcher fires now."""
        if self.disabled or self.fired:
            return None
        try:
            self.steps += 1
            self._latch(call)
            self.fired = self._decide()
        except Exception:  # fail open: never a false stop, never a silenced criterion
            log.exception("early-stop watcher failed; the run continues to its natural end")
            self.disabled = True
            return None
        return self.fired

    def _latch(self, call: ToolCallRecord) -> None:
        for armed in self.armed:
            if armed.verdict is not None:
                continue  # latched: never re-checked
            armed.hits += armed.criterion.live_hit(call)
            live = armed.criterion.live_verdict(armed.hits)
            armed.verdict = {"pass": PASSED, "fail": FAILED}.get(live) if live else None
            if armed.verdict is None and armed.decide_within is not None and self.steps >= armed.decide_within:
                armed.verdict = TIMED_OUT

    def _decide(self) -> str | None:
        undecided_pass_capable = [a for a in self.armed if a.pass_capable and a.verdict is None]
        total = sum(a.weight for a in self.armed)
        if any(a.failed for a in self.armed) and not undecided_pass_capable:
            ceiling = sum(a.weight for a in self.armed if not a.failed) / total if total else 0.0
            if ceiling < self.threshold:
                return TIMED_OUT if any(a.verdict == TIMED_OUT for a in self.armed) else REASON_FAIL
        subset = [a for a in self.armed if a.stop_on_pass]
        if subset and not [a for a in undecided_pass_capable if not a.stop_on_pass]:
            weight = sum(a.weight for a in subset)
            floor = sum(a.weight for a in subset if a.verdict == PASSED) / weight if weight else 0.0
            if floor >= self.threshold:
                return REASON_PASS
        return None
