"""From criterion outcomes to a task verdict.

Task success: every gating criterion (weight > 0) reaches its pass
threshold. Weighted score: Σ score·weight / Σ weight over the gating
criteria. A weight-0 criterion is informational: checked, stored, reported,
never scored or gating.
"""

from __future__ import annotations

import logging
import traceback

from .criteria import CHECKS, CheckContext, CriterionBase, Outcome
from .results import CriterionResult
from .secrets import redact

log = logging.getLogger(__name__)


def run_check(criterion: CriterionBase, ctx: CheckContext) -> Outcome:
    """A check that crashes, or reads outside the sandbox, scores 0 with its error."""
    check = CHECKS.get(criterion.type)  # type: ignore[attr-defined]
    if check is None:
        kind = criterion.type  # type: ignore[attr-defined]
        return Outcome(0.0, error=f"{kind} is not available in this release of coder-eval (no judge transport yet)")
    ctx.capped_reads.clear()
    try:
        outcome = check(criterion, ctx)
    except (FileNotFoundError, PermissionError, ValueError, OSError) as exc:
        return Outcome(0.0, error=str(exc))
    except Exception as exc:  # a bug in a check must not stop the other criteria
        log.debug("criterion %s crashed:\n%s", criterion.type, traceback.format_exc())  # type: ignore[attr-defined]
        return Outcome(0.0, error=f"{type(exc).__name__}: {exc}")
    if ctx.capped_reads:  # the verdict rests on part of a file: say so
        outcome.details["read_capped"] = list(ctx.capped_reads)
    return outcome


def _scrub(value: object, reference: str | None) -> object:
    """Keep the reference solution (and secrets) out of persisted details."""
    if isinstance(value, str):
        text = redact(value)
        if reference and reference.strip() and reference.strip() in text:
            text = text.replace(reference.strip(), "[reference removed]")
        return text
    if isinstance(value, dict):
        return {k: _scrub(v, reference) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, reference) for v in value]
    return value


def criterion_result(index: int, criterion: CriterionBase, outcome: Outcome, reference: str | None) -> CriterionResult:
    score = max(0.0, min(1.0, float(outcome.score)))
    threshold = outcome.threshold if outcome.threshold is not None else criterion.pass_threshold
    return CriterionResult(
        index=index,
        type=criterion.type,
        description=criterion.description,  # type: ignore[attr-defined]
        score=score,
        passed=outcome.error is None and score >= threshold,
        gating=criterion.gating,
        weight=criterion.weight,
        pass_threshold=threshold,
        error=_scrub(outcome.error, reference),  # type: ignore[arg-type]
        details=_scrub(outcome.details, reference),  # type: ignore[arg-type]
        expected_label=outcome.expected_label,
        observed_label=outcome.observed_label,
    )


def score_criteria(criteria: list[CriterionBase], ctx: CheckContext) -> list[CriterionResult]:
    return [criterion_result(i, c, run_check(c, ctx), ctx.reference) for i, c in enumerate(criteria)]


def gated(results: list[CriterionResult]) -> list[CriterionResult]:
    """The criteria that decide the verdict: gating, and not advisory on an early-stopped run."""
    return [r for r in results if r.gating and not r.advisory]


def weighted_score(results: list[CriterionResult]) -> float:
    deciding = gated(results)
    total = sum(r.weight for r in deciding)
    if total == 0:
        return 1.0 if all(r.passed for r in deciding) else 0.0
    return sum(r.score * r.weight for r in deciding) / total


def all_passed(results: list[CriterionResult]) -> bool:
    return all(r.passed for r in gated(results))


def armed_gate(results: list[CriterionResult], threshold: float) -> bool:
    """An early-stopped run's verdict: the armed criteria's weighted pass share reaches the threshold."""
    deciding = gated(results)
    total = sum(r.weight for r in deciding)
    return total > 0 and sum(r.weight for r in deciding if r.passed) / total >= threshold
