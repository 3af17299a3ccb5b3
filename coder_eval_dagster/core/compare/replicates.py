"""Repeated trials of a row: pass@k, pass^k and flaky rows.

A row is one row-task under one variant; its replicates (experiment
``repeats`` or ``simulation.n_trials``) are its non-ERROR evaluations: ERROR
is an infrastructure failure, left out as everywhere in the comparison.
numpy only (no pandas, no scipy): the run's summary imports this module
(through ``run_statistics``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .interval import Interval


def chance_all_within(favourable: np.ndarray, total: np.ndarray, k: int) -> np.ndarray:
    """C(favourable, k) / C(total, k), per row, as a product of k ratios in [0, 1] (no factorial overflows).

    The chance that k of ``total`` replicates, drawn without replacement, all
    fall among ``favourable`` of them; NaN where ``total < k``.
    """
    favourable = np.asarray(favourable, dtype=float)[..., None]
    total = np.asarray(total, dtype=float)[..., None]
    steps = np.arange(k)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.clip(favourable - steps, 0.0, None) / (total - steps)
    return np.where(total[..., 0] >= k, np.prod(ratios, axis=-1), np.nan)


def pass_at_k(passes: np.ndarray, replicates: np.ndarray, k: int) -> np.ndarray:
    """Chen et al. 2021 ("Evaluating LLMs trained on code"), unbiased: 1 - C(n-c, k) / C(n, k); NaN where n < k."""
    return 1.0 - chance_all_within(np.asarray(replicates) - np.asarray(passes), replicates, k)


def pass_hat_k(passes: np.ndarray, replicates: np.ndarray, k: int) -> np.ndarray:
    """Yao et al. 2024 (tau-bench): C(c, k) / C(n, k), the chance that k replicates all pass; NaN where n < k."""
    return chance_all_within(passes, replicates, k)


@dataclass(frozen=True)
class PassK:
    """pass@k and pass^k at one k: the row values averaged over the rows with at least k replicates.

    ``rows_left_out`` rows have fewer than k replicates and are not in this
    k's figures. Intervals are filled in by the comparison (bootstrap of rows).
    """

    k: int
    rows: int
    rows_left_out: int
    pass_at_k: float
    pass_hat_k: float
    pass_at_k_interval: Interval | None = None
    pass_hat_k_interval: Interval | None = None


RowInterval = Callable[[np.ndarray], Interval | None]  # per-row values -> an interval of their mean


def pass_k_figures(passes: np.ndarray, replicates: np.ndarray, interval: RowInterval | None = None) -> list[PassK]:
    """Every k from 1 to the most replicates a row has; with ``interval`` of each k's row values when given."""
    passes, replicates = np.asarray(passes), np.asarray(replicates)
    figures = []
    for k in range(1, int(replicates.max(initial=0)) + 1):
        kept = replicates >= k
        at, hat = pass_at_k(passes[kept], replicates[kept], k), pass_hat_k(passes[kept], replicates[kept], k)
        figures.append(
            PassK(
                k=k,
                rows=int(kept.sum()),
                rows_left_out=int((~kept).sum()),
                pass_at_k=float(at.mean()),
                pass_hat_k=float(hat.mean()),
                pass_at_k_interval=interval(at) if interval else None,
                pass_hat_k_interval=interval(hat) if interval else None,
            )
        )
    return figures


@dataclass(frozen=True)
class RowReplicates:
    """One row-task under one variant: how many of its non-ERROR replicates passed. Flaky when they disagree."""

    task_id: str
    variant_id: str
    passes: int
    replicates: int

    @property
    def flaky(self) -> bool:
        return 0 < self.passes < self.replicates


def flaky_rows(rows: Sequence[RowReplicates]) -> list[RowReplicates]:
    """The rows whose replicates disagree, by variant (first seen) then row-task."""
    order = {variant: index for index, variant in enumerate(dict.fromkeys(row.variant_id for row in rows))}
    return sorted((row for row in rows if row.flaky), key=lambda row: (order[row.variant_id], row.task_id))
