"""From criterion outcomes to a task verdict.

Task success: every gating criterion (weight > 0) reaches its pass
threshold. Weighted score: Σ score·weight / Σ weight over the gating
criteria. A weight-0 criterion is informational: checked, stored, reported,
never scored or gating.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .check_context import CheckContext
from .criteria import REGISTRY, CriterionBase, Outcome
from .criteria.judging import HARNESS_MADE
from .criteria.outcome import meets, scrub, scrub_fields
from .models.results import CriterionResult, TokenUsage
from .sandbox.holder import SandboxUnavailable

log = logging.getLogger(__name__)


def run_check(criterion: CriterionBase, ctx: CheckContext) -> Outcome:
    """A check that crashes, or reads outside the sandbox, scores 0 with its error."""
    try:
        return REGISTRY[criterion.type].check(criterion, ctx)
    except SandboxUnavailable:  # not the criterion's failure: the evaluation's ERROR
        raise
    except (FileNotFoundError, PermissionError, ValueError, OSError) as exc:
        return Outcome(0.0, error=str(exc))
    except Exception as exc:  # a bug in a check must not stop the other criteria
        log.debug("criterion %s crashed:\n%s", criterion.type, traceback.format_exc())
        return Outcome(0.0, error=f"{type(exc).__name__}: {exc}")


def warn_once(warnings: list[str], note: str | None) -> None:
    """``note`` among ``warnings``, once (a rescore's scoring may say it again)."""
    if note and note not in warnings:
        warnings.append(note)


def criterion_result(index: int, criterion: CriterionBase, outcome: Outcome, reference: str | None) -> CriterionResult:
    score = max(0.0, min(1.0, float(outcome.score)))
    return CriterionResult(
        index=index,
        type=criterion.type,
        description=criterion.description,
        score=score,
        passed=meets(score, criterion.pass_threshold),  # the guide's rule, errors included (coder_eval's too)
        gating=criterion.gating,
        weight=criterion.weight,
        pass_threshold=criterion.pass_threshold,
        error=scrub(outcome.error, reference),
        inputs=scrub(criterion_inputs(criterion), reference),
        details=scrub_fields(outcome.details, reference, HARNESS_MADE if criterion.calls_model else ()),  # hashes kept
        expected_label=outcome.expected_label,
        observed_label=outcome.observed_label,
    )


COMMON_FIELDS = {"type", "description", "weight", "pass_threshold"}


def criterion_inputs(criterion: CriterionBase) -> dict[str, object]:
    """The criterion's own fields as the task set them (shown beside its result)."""
    return criterion.model_dump(mode="json", exclude=COMMON_FIELDS, exclude_defaults=True)


def score_criteria(
    criteria: list[CriterionBase], ctx: CheckContext, kept: Sequence[CriterionResult] = ()
) -> list[CriterionResult]:
    """Check every criterion, except those with a ``kept`` result of the same index and type (a partial rescore).

    After each check, what its commands left running ends (pre_run's services stay): a criterion runs the agent's
    code too (a hidden test imports it), and a daemon that code left traced the next criterion's command to set
    its exit code."""
    stored = {r.index: r for r in kept}
    results = []
    for index, criterion in enumerate(criteria):
        previous = stored.get(index)
        if previous is not None and previous.type == criterion.type:
            results.append(previous)
        else:
            outcome = run_check(criterion, replace(ctx, index=index))
            warn_once(ctx.warnings, ctx.sandbox.end_leftovers())
            results.append(criterion_result(index, criterion, outcome, ctx.reference))
    return results


@dataclass
class TurnCheck:
    """A dialog's per-turn check: whether all gating criteria pass now (None: not known), and its judges' spend."""

    passed: bool | None
    results: list[CriterionResult]

    @property
    def judge_usage(self) -> list[TokenUsage]:
        return [r.token_usage for r in self.results if r.token_usage is not None]


def checkable_per_turn(criterion: CriterionBase) -> bool:
    """Not reading the reference folder or the task's: those are staged only once the agent is done."""
    return not criterion.reads_reference_dir() and not criterion.reads_task_dir()


def criteria_pass_now(criteria: list[CriterionBase], ctx: CheckContext) -> TurnCheck:
    """A dialog's per-turn check, as coder_eval's: every gating criterion on the sandbox and the dialog so far.

    The judges run too (a model call each), after the others: the check
    stops at the first failure. A gating criterion that cannot be checked per turn leaves an
    all-pass unknown (None), so the dialog never ends on "all pass" before it
    was graded; None also when nothing gates.
    """
    gating = sorted(((index, c) for index, c in enumerate(criteria) if c.gating), key=lambda ic: ic[1].calls_model)
    results: list[CriterionResult] = []
    for index, criterion in gating:
        if checkable_per_turn(criterion):
            outcome = run_check(criterion, replace(ctx, index=index))
            results.append(criterion_result(index, criterion, outcome, ctx.reference))
            if not results[-1].passed:
                return TurnCheck(False, results)
    return TurnCheck(True if gating and len(results) == len(gating) else None, results)


def kept_for_rescore(results: list[CriterionResult], only_types: set[str] | None) -> list[CriterionResult]:
    """The stored results a rescore keeps: with ``--only-criteria``, those of the other types; else none."""
    return [] if only_types is None else [r for r in results if r.type not in only_types]


def gated(results: list[CriterionResult]) -> list[CriterionResult]:
    """The criteria that decide the verdict: gating, and not advisory on an early-stopped run."""
    return [r for r in results if r.gating and not r.advisory]


def weighted_score(results: list[CriterionResult]) -> float:
    """Over every gating criterion, the advisory ones of an early-stopped run included: the guide computes it
    "regardless, for quality assessment"; only the verdict rests on the armed ones (``armed_gate``)."""
    scored = [r for r in results if r.gating]
    largest = max((r.weight for r in scored), default=0.0)
    if largest == 0:
        return 1.0 if all(r.passed for r in scored) else 0.0
    weights = [r.weight / largest for r in scored]  # scaled first: two weights of 1e308 must not sum to inf
    return sum(r.score * w for r, w in zip(scored, weights, strict=True)) / sum(weights)


def all_passed(results: list[CriterionResult]) -> bool:
    return all(r.passed for r in gated(results))


def armed_gate(results: list[CriterionResult], threshold: float) -> bool:
    """An early-stopped run's verdict: the armed criteria's weighted pass share reaches the threshold."""
    deciding = gated(results)
    total = sum(r.weight for r in deciding)
    return total > 0 and meets(sum(r.weight for r in deciding if r.passed) / total, threshold)
