"""Standard errors of a mean clustered by base task: the rows of one task are not independent.

Rows of one dataset task share a prompt template and a repository, and the
replicates of a row share everything; treating them as independent
understates the uncertainty, often several times over (Miller 2024, "Adding
Error Bars to Evals"). Each figure is reported with both standard errors and
their normal 95 % intervals. numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from .interval import Interval

Z95 = NormalDist().inv_cdf(0.975)


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
    return float(np.sqrt(groups / (groups - 1) * np.sum(sums**2)) / values.size)


def unclustered_se(values: np.ndarray) -> float | None:
    """The textbook SE of a mean, s / sqrt(n): CR1 with every observation its own cluster; None under 2 values."""
    return clustered_se(values, np.arange(np.asarray(values).size))


RATE = (0.0, 1.0)  # what a success rate or a mean score can be
DIFFERENCE = (-1.0, 1.0)  # what a paired difference of them can be


def _normal_interval(mean: float, se: float | None, span: tuple[float, float]) -> Interval | None:
    """mean +- 1.96 SE, the interval both SEs are read through (so they compare like for like), cut to ``span``:
    few clusters make it wider than what the quantity can be, and a rate's interval past 100 % reads as nonsense."""
    if se is None:
        return None
    return Interval(max(span[0], mean - Z95 * se), min(span[1], mean + Z95 * se))


@dataclass(frozen=True)
class MeanEstimate:
    """A mean with its unclustered and clustered (by base task) standard errors and normal 95 % intervals."""

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
    return MeanEstimate(
        mean=mean,
        observations=int(values.size),
        clusters=len(np.unique(np.asarray(clusters))),
        se=se,
        se_clustered=se_clustered,
        interval=_normal_interval(mean, se, span),
        interval_clustered=_normal_interval(mean, se_clustered, span),
    )
