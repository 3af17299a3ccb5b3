"""What every report says beside the statuses: each evaluation's run-time notes, and why the run failed.

An evaluation can pass while something in it went wrong (the agent cut
off at ``max_tool_calls``, a cost cap that could not be checked): its notes
say so in run.md, task.html, the run viewer and JUnit alike. A run can fail
with every evaluation green (a suite threshold, the flaky-rows gate, the
run-wide budget): ``verdict_reasons`` says why, for the viewer and JUnit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, NamedTuple, Protocol

from ..budget import NOT_RUN_BUDGET
from ..models.report import RunSummary

NOT_RUN_SEQUENTIAL = "sequential"  # the reason a sequential A/B's stop writes in run.json's not_run (runs.py)
INVALID_FILE = "a task file left out of the run is invalid (Skipped in run.md)"  # the one gate run.json omits


class Note(NamedTuple):
    kind: Literal["WARNING", "NOTE"]
    text: str


class Noted(Protocol):
    """What the notes read, alike in a run.json row (``TaskRow``) and a task.json (``EvaluationResult``)."""

    @property
    def warnings(self) -> list[str]: ...
    @property
    def max_turns_exhausted(self) -> bool: ...
    @property
    def visible_turns(self) -> int: ...
    @property
    def expected_turns(self) -> int | None: ...
    @property
    def stopped_early(self) -> bool: ...
    @property
    def early_stop_reason(self) -> str | None: ...
    @property
    def turns_remaining_at_stop(self) -> int | None: ...


def run_time_notes(evaluation: Noted) -> list[Note]:
    """coder_eval's run-time notes (max_turns exhausted, expected_turns exceeded, stopped early) with the
    evaluation's own warnings between them, in that order."""
    notes = [Note("WARNING", "max_turns exhausted")] if evaluation.max_turns_exhausted else []
    expected = evaluation.expected_turns
    if expected is not None and evaluation.visible_turns > expected:
        notes.append(Note("WARNING", f"expected_turns exceeded: {evaluation.visible_turns}/{expected} (visible turns)"))
    notes += [Note("WARNING", warning) for warning in evaluation.warnings]
    if evaluation.stopped_early:
        remaining = evaluation.turns_remaining_at_stop  # none without run_limits.max_turns: no claim then
        avoided = "" if remaining is None else f"; ≤ {remaining} turn(s) avoided"
        notes.append(Note("NOTE", f"stopped early ({evaluation.early_stop_reason}){avoided}"))
    return notes


def _left_out(report: RunSummary, reason: str) -> int:
    """How many planned evaluations never started for ``reason`` (``budget`` or ``sequential``)."""
    return sum(entry.get("reason") == reason for entry in report.not_run)


def budget_left_out(report: RunSummary) -> int:
    """How many planned evaluations the run-wide budget kept from starting."""
    return _left_out(report, NOT_RUN_BUDGET)


def evaluations(count: int) -> str:
    """``1 evaluation``, ``3 evaluations``."""
    return f"{count} evaluation{'' if count == 1 else 's'}"


def dollars(amount: float) -> str:
    """A dollar amount as every spend line shows it: ``$0.0070``."""
    return f"${amount:.4f}"


def spent_of_budget(budget: dict[str, Any]) -> str:
    """``$0.0070 of $0.0050``: the run-wide budget's spend and limit, in one money format."""
    return f"{dollars(budget['spent_usd'])} of {dollars(budget['max_usd'])}"


def budget_not_run(report: RunSummary) -> str | None:
    """``7 evaluations not run: the run-wide budget was spent ($0.0070 of $0.0050)``; None when none was left
    out."""
    left, budget = budget_left_out(report), report.budget or {}
    if not left:
        return None
    spent = f" ({spent_of_budget(budget)})" if budget else ""
    return f"{evaluations(left)} not run: the run-wide budget was spent{spent}"


def sequential_not_run(report: RunSummary) -> str | None:
    """``12 evaluations not run: the sequential A/B stopped after batch 2 (...)``: by design, not a failure."""
    left, block = _left_out(report, NOT_RUN_SEQUENTIAL), report.sequential or {}
    if not left:
        return None
    batch = block.get("stopped_at_batch")
    where = f" after batch {batch}" if batch is not None else ""
    decision = f" ({block['decision']})" if block.get("decision") else ""
    return f"{evaluations(left)} not run: the sequential A/B stopped{where}{decision}"


def _fewest_decimals(value: float, least: int, fits: Callable[[float], bool]) -> str:
    """``value`` to the fewest decimals, from ``least`` to 12, whose figure ``fits``."""
    return next((text for digits in range(least, 13) if fits(float(text := f"{value:.{digits}f}"))), f"{value:.12f}")


NOT_MEASURED = "not measured"  # a suite metric no row measured (every row an ERROR): coder_eval's suite.json omits it


def threshold_figures(threshold: dict[str, Any]) -> tuple[str, str]:
    """A suite threshold's value and minimum as every report shows them: the minimum as written, the value to 3
    to 12 decimals, as many as it takes to read the verdict from the two (0.4 and 0.40000001: NOT met)."""
    value, minimum, passed = threshold["value"], threshold["minimum"], threshold["passed"]
    if value is None:
        return NOT_MEASURED, f"{minimum:.10g}"
    shown = _fewest_decimals(value, 3, lambda figure: (figure >= minimum) == passed)
    return shown.rstrip("0").rstrip("."), f"{minimum:.10g}"


def flaky_figures(flaky: dict[str, Any]) -> tuple[str, str]:
    """The flaky-rows share and its gate (max_flaky_share) as every report shows them, both in percent: the gate
    as written, the share to as many decimals as it takes to read the verdict from the two (20.01% > 20.0%)."""
    gate = flaky["max_share"] * 100
    most = _fewest_decimals(gate, 1, lambda figure: figure == round(gate, 10))
    share = _fewest_decimals(flaky["share"] * 100, 1, lambda figure: (figure <= float(most)) == flaky["passed"])
    return f"{share}%", f"{most}%"


def _unmet_thresholds(report: RunSummary) -> list[str]:
    return [
        f"{entry['base_task_id']} [{entry['variant_id']}] {t['metric']} {' < '.join(threshold_figures(t))}"
        for entry in report.suite
        for t in entry.get("thresholds", [])
        if not t["passed"]
    ]


def verdict_reasons(report: RunSummary) -> list[str]:
    """Why the run failed, one phrase per gate it failed (none when it passed), as run.json's ``passed`` decides."""
    if report.passed:
        return []
    reasons = []
    missed = sum(not row.success for row in report.task_results)
    if missed:
        reasons.append(f"{missed} of {report.tasks_run} evaluations did not pass")
    unmet = _unmet_thresholds(report)
    if unmet:
        reasons.append("suite thresholds not met: " + ", ".join(unmet))
    flaky = report.flaky_gate
    if flaky is not None and not flaky["passed"]:
        share, most = flaky_figures(flaky)
        reasons.append(f"flaky rows {share} > max_flaky_share {most}")
    budget = budget_not_run(report)
    if budget:
        reasons.append(budget)
    return reasons or [INVALID_FILE]


def verdict_line(report: RunSummary) -> str:
    """``FAILED: 1 of 7 evaluations did not pass; ...``: the verdict and its reasons, then what was not run by
    design (plain text: escape it where it is shown)."""
    if report.passed:
        line = f"PASSED: {report.tasks_succeeded} of {report.tasks_run} evaluations passed"
    else:
        line = "FAILED: " + "; ".join(verdict_reasons(report))
    sequential = sequential_not_run(report)
    return line + (f" \u00b7 {sequential}" if sequential else "")
