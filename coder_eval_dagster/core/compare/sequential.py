"""A sequential A/B: rows run in batches, and after each batch an anytime-valid confidence sequence decides.

The sequence is for the mean paired difference in success (other - baseline,
per row in [-1, 1]; with one replicate in {-1, 0, 1}). It is the hedged
capital process of Waudby-Smith & Ramdas (2023), "Estimating means of
bounded random variables by betting" (JRSS B 86(1)), with their predictable
plug-in bets: mapped to x = (d + 1) / 2 in [0, 1], a candidate mean m is
rejected once either bettor's wealth

    K+(m) = prod_i (1 + lambda_i (x_i - m)),   K-(m) = prod_i (1 - lambda_i (x_i - m))

reaches 2 / alpha. Under the hypothesis that the mean is m both are
nonnegative martingales, so by Ville's inequality the chance that m is ever
rejected, at any batch, is at most alpha: the run may look after every batch
and stop, and its error rate is still alpha.

Two adaptations, both keeping that guarantee: a bet is fixed for a whole
batch (from the batches before it), so the order of rows inside a batch,
which run together, does not matter; and every bet is capped at 1/2 for all
m (the paper caps at c/m and c/(1-m)), which keeps K+ falling and K- rising
in m, so the set of kept means is an interval whose ends are found by
bisection. The interval reported after a batch is the intersection of all
the intervals so far (still valid), so a decision once reached is kept.

numpy only; a decision at 10,000 rows costs a few milliseconds
(bench/bench_sequential.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .interval import Interval

ALPHA = 0.05
MAX_BET = 0.5  # a factor 1 + lambda (x - m) never drops below 1/2
TOLERANCE = 1e-6  # the interval's ends, on the difference scale to 2e-6

Decision = Literal["other_better", "baseline_better", "equivalent", "undecided"]


@dataclass(frozen=True)
class _Batches:
    """Where each batch starts and ends among the observations, and its label (the caller's batch number)."""

    starts: np.ndarray
    ends: np.ndarray
    sizes: np.ndarray
    labels: np.ndarray


def _batches(batches: Sequence[int] | np.ndarray | None, count: int) -> _Batches:
    """Each observation its own batch (labels 1, 2, ...) without ``batches``; else the runs of equal labels."""
    if batches is None:
        starts = np.arange(count)
        return _Batches(starts, starts + 1, np.ones(count, dtype=int), starts + 1)
    labels = np.asarray(batches)
    if labels.shape != (count,):
        raise ValueError(f"{labels.size} batch numbers for {count} differences")
    if np.any(np.diff(labels) < 0):
        raise ValueError("differences must come in batch order (batch numbers never decreasing)")
    starts = np.flatnonzero(np.r_[count > 0, labels[1:] != labels[:-1]])
    ends = np.r_[starts[1:], count].astype(int)[: starts.size]
    return _Batches(starts, ends, ends - starts, labels[starts])


def _unit_scale(differences: np.ndarray | Sequence[float]) -> np.ndarray:
    """Differences in [-1, 1] as x = (d + 1) / 2 in [0, 1], the range the betting construction needs."""
    values = np.asarray(differences, dtype=float)
    if np.any(np.abs(values) > 1):
        raise ValueError("paired differences must lie in [-1, 1]")
    return (values + 1.0) / 2.0


def betting_fractions(x: np.ndarray, batches: _Batches, alpha: float) -> np.ndarray:
    """Waudby-Smith & Ramdas's predictable plug-in bets for the hedged process, one per batch, over x's last axis.

    lambda_t = min(1/2, sqrt(2 log(2/alpha) / (sigma2 t log(1 + t)))), with
    1 / sqrt(t log(1 + t)) averaged over the batch's rows and sigma2 the rows
    before the batch's spread around their mean, each shrunk by one
    pseudo-row (mean 1/2, spread 1/4): sigma2_s = (1/4 + sum (x_i - mu_s)^2) /
    (s + 1), mu_s = (1/2 + sum x_i) / (s + 1). The paper uses running means
    in sigma2; sums over whole batches keep the order inside a batch out of it.
    """
    rows_before = batches.starts
    before = np.concatenate([np.zeros((*x.shape[:-1], 1)), np.cumsum(x, axis=-1)], axis=-1)[..., rows_before]
    squares = np.concatenate([np.zeros((*x.shape[:-1], 1)), np.cumsum(x**2, axis=-1)], axis=-1)[..., rows_before]
    mean = (0.5 + before) / (rows_before + 1)
    spread = (0.25 + squares - 2 * mean * before + rows_before * mean**2) / (rows_before + 1)
    t = np.arange(1, x.shape[-1] + 1)
    schedule = np.add.reduceat(1.0 / np.sqrt(t * np.log1p(t)), batches.starts) / batches.sizes
    bets = np.minimum(MAX_BET, np.sqrt(2.0 * np.log(2.0 / alpha) / spread) * schedule)
    return np.repeat(bets, batches.sizes, axis=-1)


def _log_wealth(x: np.ndarray, bets: np.ndarray, ends: np.ndarray, m: float) -> np.ndarray:
    """log K+(m) after each batch (the bettor on a mean above m); K-(m) is K+(1 - m) of 1 - x."""
    return np.cumsum(np.log1p(bets * (x - m)), axis=-1)[..., ends - 1]


def _ever_rejected(x: np.ndarray, bets: np.ndarray, ends: np.ndarray, m: float, threshold: float) -> np.ndarray:
    """By each batch: has K+(m) ever reached the threshold (m below the sequence)?"""
    return np.maximum.accumulate(_log_wealth(x, bets, ends, m), axis=-1) >= threshold


def _threshold(alpha: float) -> float:
    """The log-wealth that rejects: log(2 / alpha)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1 (got {alpha})")
    return float(np.log(2.0 / alpha))  # the hedged process: each bettor holds half the stake


@dataclass(frozen=True)
class _Evidence:
    """The observations on the [0, 1] scale, their bets and batches, and the log-wealth that rejects."""

    x: np.ndarray
    bets: np.ndarray
    layout: _Batches
    threshold: float


def _evidence(
    differences: np.ndarray | Sequence[float], batches: Sequence[int] | np.ndarray | None, alpha: float
) -> _Evidence:
    """Everything a decision and an interval need, computed once per call."""
    x = _unit_scale(differences)
    layout = _batches(batches, x.shape[-1])
    return _Evidence(x, betting_fractions(x, layout, alpha), layout, _threshold(alpha))


def _decision_codes(evidence: _Evidence, margin: float | None) -> np.ndarray:
    """Indices into DECISIONS after each batch (see ``decisions_by_batch``)."""
    x, bets, ends, threshold = evidence.x, evidence.bets, evidence.layout.ends, evidence.threshold
    above = _ever_rejected(x, bets, ends, 0.5, threshold)
    below = _ever_rejected(1.0 - x, bets, ends, 0.5, threshold)
    codes = np.where(above & ~below, 1, np.where(below & ~above, 2, 0))
    if margin is None:
        return codes
    if margin <= 0:
        raise ValueError(f"the equivalence margin must be positive (got {margin})")
    low_end = (1.0 - margin) / 2.0  # -margin on the [0, 1] scale; +margin is the same point of 1 - x
    inside = _ever_rejected(x, bets, ends, low_end, threshold) & _ever_rejected(1.0 - x, bets, ends, low_end, threshold)
    return np.where(inside & ~above & ~below, 3, codes)


DECISIONS: tuple[Decision, ...] = ("undecided", "other_better", "baseline_better", "equivalent")


def decisions_by_batch(
    differences: np.ndarray,
    batches: Sequence[int] | np.ndarray | None = None,
    alpha: float = ALPHA,
    margin: float | None = None,
) -> np.ndarray:
    """The decision after each batch (strings of ``Decision``), vectorized over leading axes (simulations).

    other_better / baseline_better: the sequence lies above / below 0;
    equivalent (with ``margin``): it lies inside (-margin, margin) and holds 0.
    An empty sequence (both sides of 0 rejected, a chance below alpha) is undecided.
    """
    return np.take(DECISIONS, _decision_codes(_evidence(differences, batches, alpha), margin))


def _lower_end(x: np.ndarray, bets: np.ndarray, ends: np.ndarray, threshold: float) -> float:
    """The largest m (x scale) K+ has ever rejected, by bisection (rejection only falls as m rises); 0 if none."""
    if not _ever_rejected(x, bets, ends, 0.0, threshold)[-1]:
        return 0.0
    rejected, kept = 0.0, 1.0  # K+(1) never exceeds 1
    while kept - rejected > TOLERANCE / 2:
        middle = (rejected + kept) / 2
        if _ever_rejected(x, bets, ends, middle, threshold)[-1]:
            rejected = middle
        else:
            kept = middle
    return rejected  # the outer end: the interval errs wide


def _interval(evidence: _Evidence, batches_seen: int) -> Interval:
    """The running intersection of the sequence after the first ``batches_seen`` batches, on the difference scale."""
    ends = evidence.layout.ends[:batches_seen]
    x, bets = evidence.x[: ends[-1]], evidence.bets[: ends[-1]]
    low = _lower_end(x, bets, ends, evidence.threshold)
    high = 1.0 - _lower_end(1.0 - x, bets, ends, evidence.threshold)
    return Interval(2.0 * low - 1.0, 2.0 * high - 1.0)


@dataclass(frozen=True)
class SequentialStep:
    """The sequence after one batch: rows seen so far, the interval of the difference, the decision."""

    batch: int
    rows: int
    interval: Interval
    decision: Decision


@dataclass(frozen=True)
class SequentialResult:
    """Where a sequential comparison stands: the decision, after which batch it was first reached, the interval."""

    decision: Decision
    decided_at_batch: int | None
    rows: int
    batches: int
    interval: Interval


def sequence_over_batches(
    differences: np.ndarray | Sequence[float],
    batches: Sequence[int] | np.ndarray | None = None,
    alpha: float = ALPHA,
    margin: float | None = None,
) -> list[SequentialStep]:
    """The sequence after every batch; ``differences`` (other - baseline per row) in batch order.

    ``batches`` gives each difference's batch number (never decreasing; rows of a
    batch in any order); without it every difference is a batch of its own.
    """
    evidence = _evidence(differences, batches, alpha)
    codes = _decision_codes(evidence, margin)
    layout = evidence.layout
    return [
        SequentialStep(int(layout.labels[j]), int(layout.ends[j]), _interval(evidence, j + 1), DECISIONS[code])
        for j, code in enumerate(codes.tolist())
    ]


def sequential_decision(
    differences: np.ndarray | Sequence[float],
    batches: Sequence[int] | np.ndarray | None = None,
    alpha: float = ALPHA,
    margin: float | None = None,
) -> SequentialResult:
    """The decision after the last batch seen (what the run loop asks after each batch), and its interval."""
    evidence = _evidence(differences, batches, alpha)
    layout = evidence.layout
    if evidence.x.size == 0:
        return SequentialResult("undecided", None, 0, 0, Interval(-1.0, 1.0))
    codes = _decision_codes(evidence, margin)
    decision = DECISIONS[int(codes[-1])]
    return SequentialResult(
        decision=decision,
        decided_at_batch=None if decision == "undecided" else int(layout.labels[int(np.argmax(codes == codes[-1]))]),
        rows=int(evidence.x.size),
        batches=int(layout.labels.size),
        interval=_interval(evidence, layout.labels.size),
    )


@dataclass(frozen=True)
class BatchPlan:
    """Row ids in run order, cut into batches; rows beyond ``max_rows`` are never started."""

    batches: list[list[str]]
    beyond_max_rows: list[str]


def plan_batches(
    row_ids: Sequence[str], seed: int, batch_rows: int, min_rows: int = 0, max_rows: int | None = None
) -> BatchPlan:
    """A seeded random order of the rows (the same ids and seed, the same plan), in batches of ``batch_rows``.

    The first batch holds at least ``min_rows`` rows, so no decision is taken
    on fewer. A random order makes the rows seen so far a random sample.
    """
    if batch_rows < 1 or min_rows < 0 or (max_rows is not None and max_rows < 1):
        raise ValueError("batch_rows and max_rows must be at least 1, min_rows at least 0")
    ids = sorted(set(row_ids))
    order = [ids[i] for i in np.random.default_rng(seed).permutation(len(ids))]
    planned, beyond = order[:max_rows], order[len(order) if max_rows is None else max_rows :]
    first = max(batch_rows, min_rows)
    batches = [planned[:first]] + [planned[i : i + batch_rows] for i in range(first, len(planned), batch_rows)]
    return BatchPlan([batch for batch in batches if batch], beyond)
