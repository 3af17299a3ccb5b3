"""Standard errors of a mean clustered by base task: the rows of one task are not independent.

Rows of one dataset task share a prompt template and a repository, and the
replicates of a row share everything; treating them as independent
understates the uncertainty, often several times over (Miller 2024, "Adding
Error Bars to Evals"). Each figure is reported with both standard errors and
their 95 % intervals, read through Student's t with one degree of freedom
fewer than the clusters: with few base tasks the clustered SE is itself
uncertain (Cameron & Miller 2015, "A Practitioner's Guide to Cluster-Robust
Inference"), and t(0.975, 1) is 12.7, not 1.96. numpy and math only: the
run's summary imports this module, and scipy.stats costs 0.5 s to import.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from math import atan, cos, exp, lgamma, log, log1p, pi, sin, sqrt
from statistics import NormalDist

import numpy as np

from .interval import Interval
from .stats import CONFIDENCE


def _t_central_mass(t: float, df: int) -> float:
    """P(|T| <= t) for Student's T with integer ``df``: the finite series of Abramowitz & Stegun 26.7.3-4.

    With theta = atan(t / sqrt(df)), the terms run over cos(theta)^j for j of
    the parity of df, j <= df - 2, each the one before times cos^2 (j+1)/(j+2).
    """
    theta = atan(t / sqrt(df))
    powers = np.arange(df % 2, df - 1, 2)
    ratios = cos(theta) ** 2 * (powers[:-1] + 1) / (powers[:-1] + 2)
    total = float(np.sum(np.cumprod(np.r_[cos(theta) if df % 2 else 1.0, ratios]))) if powers.size else 0.0
    return 2 / pi * (theta + sin(theta) * total) if df % 2 else sin(theta) * total


def _t_density(t: float, df: int) -> float:
    log_scale = lgamma((df + 1) / 2) - lgamma(df / 2) - 0.5 * log(df * pi)
    return exp(log_scale - (df + 1) / 2 * log1p(t * t / df))


@cache
def t_quantile(probability: float, df: int) -> float:
    """Student's t quantile (``probability`` above 1/2, integer ``df`` >= 1), as scipy's to about 1e-12.

    Newton's method on the exact distribution from the normal quantile: the
    central mass is concave in t, so each step stays below the root and the
    steps shrink to it.
    """
    target = 2 * probability - 1
    t = NormalDist().inv_cdf(probability)
    for _ in range(200):
        step = (target - _t_central_mass(t, df)) / (2 * _t_density(t, df))
        t += step
        if step <= 1e-13 * t:
            break
    return t


def clustered_se(values: np.ndarray, clusters: np.ndarray) -> float | None:
    """CR1 cluster-robust SE of the mean (Liang & Zeger 1986; Miller 2024 times G/(G-1)); None under 2 clusters.

    sqrt(G / (G - 1) * sum_g (sum_{i in g} (y_i - mean))^2) / n: the sandwich
    variance of a regression on a constant, with Stata's small-sample factor.
    """
    values = np.asarray(values, dtype=float)
    _, cluster_index = np.unique(np.asarray(clusters), return_inverse=True)
    groups = int(cluster_index.max(initial=-1)) + 1
    if groups < 2:
        return None
    sums = np.bincount(cluster_index, weights=values - values.mean(), minlength=groups)
    # Deviations that cancel exactly (two tasks' equal means of thirds) leave rounding in their sums: 0 it is, or an
    # interval of no width passes for one 1e-15 wide, and reads as certainty.
    sums[np.abs(sums) <= _rounding(values)] = 0.0
    return float(np.sqrt(groups / (groups - 1) * np.sum(sums**2)) / values.size)


def _rounding(values: np.ndarray) -> float:
    """A bound on the floating-point error of a sum of ``values``' deviations from their mean."""
    return 8 * np.finfo(float).eps * values.size * max(1.0, float(np.abs(values).max(initial=0.0)))


def unclustered_se(values: np.ndarray) -> float | None:
    """The textbook SE of a mean, s / sqrt(n): CR1 with every observation its own cluster; None under 2 values."""
    return clustered_se(values, np.arange(np.asarray(values).size))


RATE = (0.0, 1.0)  # what a success rate or a mean score can be
DIFFERENCE = (-1.0, 1.0)  # what a paired difference of them can be


def _t_interval(mean: float, se: float | None, clusters: int, span: tuple[float, float]) -> Interval | None:
    """mean +- t(0.975, clusters - 1) SE, cut to ``span``: few clusters make it wider than what the quantity can
    be, and a rate's interval past 100 % reads as nonsense. Unclustered, every observation is its own cluster."""
    if se is None:
        return None
    half = t_quantile((1 + CONFIDENCE) / 2, clusters - 1) * se
    return Interval(max(span[0], mean - half), min(span[1], mean + half))


@dataclass(frozen=True)
class MeanEstimate:
    """A mean with its unclustered and clustered (by base task) standard errors and t 95 % intervals."""

    mean: float
    observations: int
    clusters: int
    se: float | None
    se_clustered: float | None
    interval: Interval | None
    interval_clustered: Interval | None

    @property
    def clustering_matters(self) -> bool:
        """Some cluster holds more than one observation: the clustered interval is the honest one."""
        return self.clusters < self.observations


def mean_estimate(values: np.ndarray, clusters: np.ndarray, span: tuple[float, float]) -> MeanEstimate | None:
    """The mean of ``values`` (which lie in ``span``) with both standard errors; None without values."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return None
    mean = float(values.mean())
    se, se_clustered = unclustered_se(values), clustered_se(values, clusters)
    groups = len(np.unique(np.asarray(clusters)))
    return MeanEstimate(
        mean=mean,
        observations=int(values.size),
        clusters=groups,
        se=se,
        se_clustered=se_clustered,
        interval=_t_interval(mean, se, values.size, span),
        interval_clustered=_t_interval(mean, se_clustered, groups, span),
    )
