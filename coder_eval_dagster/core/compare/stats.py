"""The statistics of a paired comparison.

Wilson intervals for success rates and McNemar's exact test on the discordant
pairs (a two-sided binomial test at p = 0.5) in plain Python, the same numbers
as scipy.stats (tests/core/test_compare_stats.py): importing scipy.stats costs
about 0.5 s, a large share of a one-row run's 1.2-2.5 s (docs/performance.md),
which a run that compares a few rows must not pay.
The test's power for the "how many rows do I need" table of docs/running.md
uses scipy.stats; a percentile bootstrap over rows for paired mean
differences, in numpy.
"""

from __future__ import annotations

from math import sqrt

import numpy as np

from .interval import Interval

CONFIDENCE = 0.95
ALPHA = 0.05
SEED = 20261203  # fixed: the same rows give the same interval, run after run
RESAMPLES = 1999  # 95 % percentile bounds to about +-0.5 percentage point of their limit at 10,000 rows
BREAKDOWN_RESAMPLES = 999  # per task and per tag: many small groups
# The 97.5 % normal quantile as scipy's ndtri gives it (statistics.NormalDist's is one ulp lower): the
# intervals come out bit for bit as scipy's binomtest(...).proportion_ci(method="wilson") gave them.
Z_WILSON = 1.959963984540054


def wilson_interval(successes: float, trials: int) -> Interval | None:
    """Wilson score 95 % interval of ``successes / trials``; None with no trials.

    scipy's formula (Newcombe 1998), operation for operation, so the figures
    in comparison files stay what they were when scipy computed them.
    ``successes`` may be a sum of rows' success rates (the rows as trials).
    """
    if trials == 0:
        return None
    z, p = Z_WILSON, successes / trials
    denominator = 2 * (trials + z**2)
    center = (2 * trials * p + z**2) / denominator
    delta = z / denominator * sqrt(4 * trials * p * (1 - p) + z**2)
    low = 0.0 if successes == 0 else center - delta
    high = 1.0 if successes == trials else center + delta
    return Interval(low, high)


def mcnemar_exact_p(regressions: int, improvements: int) -> float:
    """Two-sided exact McNemar p on the discordant pairs; 1.0 when nothing flipped.

    The binomial test at p = 0.5 is symmetric: p = 2 P(X <= min(b, c)),
    X ~ Bin(b + c, 1/2), capped at 1, summed in exact integers.
    """
    flips = regressions + improvements
    fewer = min(regressions, improvements)
    if 2 * fewer == flips:  # nothing flipped, or as many each way
        return 1.0
    term, tail = 1, 1  # C(flips, 0), and the sum of C(flips, j) for j <= i
    for i in range(fewer):
        term = term * (flips - i) // (i + 1)
        tail += term
    return min(1.0, 2 * tail / (1 << flips))


def _bootstrap_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The means of ``resamples`` resamples of the rows (drawn with replacement), 200,000 numbers at a time.

    With few distinct values (0/1 outcomes, pass@k of a few replicates) a
    resample is drawn as how many rows of each value it holds (a multinomial):
    the same distribution, hundreds of times cheaper than drawing every row.
    """
    levels, counts = np.unique(values, return_counts=True)
    by_level = levels.size * 10 < values.size
    chunk = max(1, 200_000 // (levels.size if by_level else values.size))
    means = []
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        if by_level:
            means.append(rng.multinomial(values.size, counts / values.size, size=size) @ levels / values.size)
        else:
            means.append(values[rng.integers(0, values.size, size=(size, values.size))].mean(axis=1))
    return np.concatenate(means)


def paired_bootstrap_interval(differences: np.ndarray, resamples: int = RESAMPLES) -> Interval | None:
    """Percentile bootstrap 95 % interval of the mean of per-row values (rows resampled, seeded).

    Resampling the differences of paired rows is the paired bootstrap: a row
    always carries both arms. Fewer than two rows have no interval.
    """
    values = np.asarray(differences, dtype=float)
    if values.size < 2:
        return None
    if np.all(values == values[0]):  # every resample has the same mean
        return Interval(float(values[0]), float(values[0]))
    means = _bootstrap_means(values, resamples, np.random.default_rng(SEED))
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(float(low), float(high))


def mcnemar_power(rows: int, effect: float, discordance: float, alpha: float = ALPHA) -> float:
    """Power of the exact McNemar test over ``rows`` paired rows.

    ``discordance`` is the share of rows whose outcome differs between the
    arms, ``effect`` the difference in success rates (improvements minus
    regressions, as shares of all rows); the discordant count is binomial,
    and each discordant row is an improvement with probability
    ``(discordance + effect) / (2 * discordance)``. For the power table only:
    it imports scipy.stats.
    """
    from scipy import stats

    flips = np.arange(rows + 1)
    toward = (discordance + effect) / (2 * discordance)
    # The largest count k on each tail whose two-sided exact p is below alpha (p = 0.5 is symmetric).
    lower = stats.binom.ppf(alpha / 2, flips, 0.5)
    lower = np.where(stats.binom.cdf(lower, flips, 0.5) * 2 < alpha, lower, lower - 1)
    rejecting = np.where(
        lower >= 0,
        stats.binom.cdf(lower, flips, toward) + stats.binom.sf(flips - lower - 1, flips, toward),
        0.0,
    )
    return float(np.sum(stats.binom.pmf(flips, rows, discordance) * rejecting))


def rows_needed(effect: float, discordance: float, power: float = 0.8, limit: int = 20_000) -> int | None:
    """The fewest paired rows giving the exact McNemar test ``power`` (None beyond ``limit``)."""
    if mcnemar_power(limit, effect, discordance) < power:
        return None
    low, high = 1, limit
    while low < high:
        middle = (low + high) // 2
        if mcnemar_power(middle, effect, discordance) >= power:
            high = middle
        else:
            low = middle + 1
    return low


POWER_EFFECTS = (0.05, 0.10, 0.20)
POWER_DISCORDANCE_FACTORS = (1, 2, 4)  # discordant share = effect x factor (1: every flip goes one way)


def power_table_markdown() -> str:
    """docs/running.md's table: rows needed for 80 % power at alpha 0.05, by effect and discordance."""
    header = "| difference in success rate | " + " | ".join(
        f"rows flipping = {factor} x difference" for factor in POWER_DISCORDANCE_FACTORS
    )
    lines = [header + " |", "|---" * (len(POWER_DISCORDANCE_FACTORS) + 1) + "|"]
    for effect in POWER_EFFECTS:
        cells = [rows_needed(effect, min(1.0, effect * factor)) for factor in POWER_DISCORDANCE_FACTORS]
        lines.append(f"| {effect:.0%} | " + " | ".join(str(c) if c else "> 20000" for c in cells) + " |")
    return "\n".join(lines) + "\n"
