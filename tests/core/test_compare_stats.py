"""The comparison's statistics against hand-computed small cases."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from coder_eval_dagster.core.compare.stats import (
    Interval,
    mcnemar_exact_p,
    mcnemar_power,
    paired_bootstrap_interval,
    power_table_markdown,
    rows_needed,
    wilson_interval,
)

Z = 1.959963984540054  # the 97.5 % normal quantile


def wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("k", [0, 10, 5])
def test_wilson_bounds_at_zero_n_and_half(k: int) -> None:
    interval = wilson_interval(k, 10)
    assert interval is not None
    low, high = wilson_by_hand(k, 10)
    assert interval.low == pytest.approx(low, abs=1e-9) and interval.high == pytest.approx(high, abs=1e-9)
    if k == 0:
        assert interval.low == pytest.approx(0.0, abs=1e-12) and interval.high == pytest.approx(Z * Z / (10 + Z * Z))
    if k == 10:
        assert interval.high == pytest.approx(1.0) and interval.low == pytest.approx(10 / (10 + Z * Z))
    if k == 5:
        assert interval.low + interval.high == pytest.approx(1.0)  # symmetric about one half


def test_wilson_without_trials_has_no_interval() -> None:
    assert wilson_interval(0, 0) is None


def test_mcnemar_exact_p_of_a_known_flip_table() -> None:
    # 2x2 table: 1 row passed only under A, 9 passed only under B. p = 2 * P(X <= 1), X ~ Bin(10, 1/2) = 22/1024
    assert mcnemar_exact_p(1, 9) == pytest.approx(22 / 1024, abs=1e-12)
    assert mcnemar_exact_p(9, 1) == pytest.approx(22 / 1024, abs=1e-12)
    # 0 vs 6: 2 / 64
    assert mcnemar_exact_p(0, 6) == pytest.approx(2 / 64, abs=1e-12)
    assert mcnemar_exact_p(3, 3) == 1.0
    assert mcnemar_exact_p(0, 0) == 1.0


@pytest.mark.parametrize("trials", [1, 2, 3, 7, 10, 33, 100, 257, 1000, 9999])
def test_the_wilson_interval_is_scipys_bit_for_bit(trials: int) -> None:
    """Computed without scipy (issue 25), the interval is still the one comparison files held before."""
    for successes in sorted({*range(min(trials, 40) + 1), *range(trials - min(trials, 40), trials + 1)}):
        ci = stats.binomtest(successes, trials).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson_interval(successes, trials) == Interval(float(ci.low), float(ci.high)), (successes, trials)


@pytest.mark.parametrize("flips", [1, 2, 5, 10, 31, 64, 101, 500, 2001])
def test_mcnemar_exact_p_is_scipys_binomial_test(flips: int) -> None:
    """The exact integer sum gives scipy's two-sided binomial p to 1e-9 (relative): splits from one-sided to even."""
    half = flips // 2
    for improvements in sorted(
        {*range(0, flips + 1, max(1, flips // 100)), half - 1, half, half + 1} & {*range(flips + 1)}
    ):
        expected = stats.binomtest(improvements, flips, 0.5, alternative="two-sided").pvalue
        assert mcnemar_exact_p(flips - improvements, improvements) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def synthetic_pairs(rows: int, seed: int) -> tuple[np.ndarray, float]:
    """Paired outcomes with a true difference of +0.15 (A succeeds with 0.55, B with 0.70)."""
    rng = np.random.default_rng(seed)
    a = rng.random(rows) < 0.55
    b = a | (rng.random(rows) < 0.15 / 0.45)  # B keeps A's successes and adds a third of its failures
    return b.astype(float) - a.astype(float), 0.15


def test_paired_bootstrap_contains_the_true_difference_and_is_reproducible() -> None:
    differences, truth = synthetic_pairs(400, seed=3)
    first = paired_bootstrap_interval(differences)
    second = paired_bootstrap_interval(differences)
    assert first == second  # seeded
    assert first is not None and first.low < truth < first.high
    assert first.low < differences.mean() < first.high
    assert 0.03 < first.high - first.low < 0.15  # about 2 x 1.96 x sd / sqrt(n)


@pytest.mark.parametrize("distinct", ["few values: counts per value", "many values: rows drawn"])
def test_the_bootstrap_agrees_with_scipys_percentile_bootstrap(distinct: str) -> None:
    """Both ways of drawing a resample (a multinomial count per value, or every row) give scipy's interval."""
    differences, _ = synthetic_pairs(600, seed=5)
    if distinct.startswith("many"):
        differences = differences + np.random.default_rng(1).normal(0.0, 0.05, differences.size)
    ours = paired_bootstrap_interval(differences, resamples=9999)
    reference = stats.bootstrap(
        (differences,), np.mean, n_resamples=9999, method="percentile", rng=np.random.default_rng(0)
    ).confidence_interval
    assert ours is not None
    assert ours.low == pytest.approx(reference.low, abs=0.006) and ours.high == pytest.approx(reference.high, abs=0.006)


def test_bootstrap_of_constant_or_single_rows() -> None:
    assert paired_bootstrap_interval(np.zeros(20)) == Interval(0.0, 0.0)
    assert paired_bootstrap_interval(np.array([1.0])) is None


def test_rows_needed_is_the_first_row_count_with_the_power() -> None:
    rows = rows_needed(0.10, 0.20)
    assert rows is not None
    assert mcnemar_power(rows, 0.10, 0.20) >= 0.8 > mcnemar_power(rows - 1, 0.10, 0.20)
    assert rows_needed(0.20, 0.20) < rows < rows_needed(0.05, 0.20)  # type: ignore[operator]
    # every flip one way: 6 flips give p = 1/32 < 0.05, so power is P(Bin(n, 0.1) >= 6)
    assert mcnemar_power(100, 0.10, 0.10) == pytest.approx(
        1 - sum(math.comb(100, k) * 0.1**k * 0.9 ** (100 - k) for k in range(6))
    )


def test_the_power_table_of_the_running_guide_is_the_codes() -> None:
    guide = (Path(__file__).parent.parent.parent / "docs" / "running.md").read_text()
    assert power_table_markdown() in guide


def test_a_score_differences_interval_is_shown_to_the_figures_of_its_estimate() -> None:
    """A large run's narrow interval around a 0.025 score difference read [+0.0, +0.0]: no difference."""
    from coder_eval_dagster.core.compare.interval import Interval
    from coder_eval_dagster.core.compare.render import interval_text

    assert interval_text(Interval(0.02138, 0.02946), 1.0, "") == "[+0.02138, +0.02946]"
    assert interval_text(Interval(-0.0512, 0.031), 100.0) == "[-5.1, +3.1] pp"
