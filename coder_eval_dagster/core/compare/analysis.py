"""Paired comparison of arms (a variant in a run) on the same rows.

A row is a row-task (``task_id``); its replicates are averaged. ERROR
evaluations are infrastructure failures, not model failures: they are left
out of every average, a row whose replicates all ended in ERROR is an ERROR
row, and a row pairs only where it is not ERROR in either arm. ERROR rows
and evaluations are counted and listed apart. For McNemar's test a row
passes when more than half of its non-ERROR replicates succeeded (with one
replicate: when it succeeded). A pair's rates are means over its paired rows,
every row counting once, so their difference is the paired difference.

Beside the paired figures: each arm's pass@k and pass^k over its replicates
and its flaky rows, standard errors clustered by base task next to the
unclustered ones, and, for a run that ran in batches, the sequential A/B's
confidence sequence after each batch.

Each arm's own figures (``arm_summary``, ``arm_flaky_rows``) are computed
from plain values (``RowOutcomes``); only a pair of arms builds pandas
frames, so a comparison of one variant imports neither pandas nor scipy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from functools import cached_property
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .clustered import DIFFERENCE, RATE, MeanEstimate, mean_estimate
from .interval import Interval
from .replicates import PassK, RowReplicates, flaky_rows, pass_k_figures
from .rows import BATCH, ERROR, CompareError, Outcome, RunRows, SequentialSettings, success_rate
from .sequential import SequentialResult, SequentialStep, sequence_over_batches, sequential_decision
from .stats import (
    ALPHA,
    BREAKDOWN_RESAMPLES,
    RESAMPLES,
    SEED,
    mcnemar_exact_p,
    paired_bootstrap_interval,
    wilson_interval,
)

if TYPE_CHECKING:
    import pandas as pd

DELTA_METRICS = ("cost_usd", "tokens", "turns", "duration_s")


@dataclass(frozen=True)
class RowOutcomes:
    """One row of an arm over its non-ERROR replicates: ``arm_rows``' counts, without pandas."""

    task_id: str
    base_task_id: str
    successes: int
    evaluations: int

    @property
    def success(self) -> float:
        """The share of replicates that succeeded (``arm_rows``' ``success``)."""
        return self.successes / self.evaluations


def row_outcomes(valid: Iterable[Outcome]) -> list[RowOutcomes]:
    """Non-ERROR evaluations by row, in task_id order; a row's base task is its first evaluation's."""
    counts: dict[str, list[Any]] = {}
    for outcome in valid:
        row = counts.setdefault(outcome.task_id, [outcome.base_task_id, 0, 0])
        row[1] += outcome.success
        row[2] += 1
    return [RowOutcomes(task_id, *counts[task_id]) for task_id in sorted(counts)]


@dataclass(frozen=True)
class Arm:
    """A variant of a run: one side of a comparison."""

    run: RunRows
    variant_id: str
    label: str

    @cached_property
    def valid(self) -> list[Outcome]:
        """The arm's non-ERROR evaluations, as plain values: all its own figures need."""
        return self.run.valid(self.variant_id)

    @cached_property
    def row_outcomes(self) -> list[RowOutcomes]:
        return row_outcomes(self.valid)

    @cached_property
    def pass_k_rows(self) -> list[RowOutcomes]:
        """Every row of the arm, in task_id order: a row whose replicates all ended in ERROR has none, fewer than
        any k, so it counts in ``rows_left_out`` (analysts.md) and in no figure."""
        counted = {row.task_id for row in self.row_outcomes}
        bases = {o.task_id: o.base_task_id for o in self.run.outcomes if o.variant_id == self.variant_id}
        none = [RowOutcomes(task, base, 0, 0) for task, base in bases.items() if task not in counted]
        return sorted(self.row_outcomes + none, key=lambda row: row.task_id)

    @cached_property
    def evaluations(self) -> pd.DataFrame:
        """The arm's evaluations as a frame, for a pair (imports pandas)."""
        frame = self.run.evaluations
        return frame[frame["variant_id"] == self.variant_id]

    @cached_property
    def rows(self) -> pd.DataFrame:
        """One line per non-ERROR row (``arm_rows``): made once, read by each pair."""
        return arm_rows(self.evaluations)


@dataclass
class TaskPassK:
    """pass@k and pass^k of one base task's rows in an arm."""

    base_task_id: str
    pass_k: list[PassK]


@dataclass
class ArmSummary:
    """An arm on all its own rows (unpaired): the per-variant figures.

    ``success_clustered`` and ``score_clustered`` are the success rate and
    mean score over the arm's non-ERROR evaluations with standard errors
    clustered by base task (which holds a row's replicates too).
    """

    label: str
    run_id: str
    variant_id: str
    evaluations: int
    errors: int
    successes: int
    success_rate: float | None
    interval: Interval | None
    mean_score: float | None
    mean_cost_usd: float | None
    success_clustered: MeanEstimate | None
    score_clustered: MeanEstimate | None
    max_replicates: int
    pass_k: list[PassK]
    pass_k_by_task: list[TaskPassK]


@dataclass
class FlakyRow:
    """A row of an arm whose non-ERROR replicates disagree: ``passes`` of ``replicates`` succeeded."""

    run_id: str
    task_id: str
    variant_id: str
    passes: int
    replicates: int


@dataclass
class Flip:
    task_id: str
    base_task_id: str
    score_baseline: float
    score_other: float
    report_baseline: str
    report_other: str


@dataclass
class ErrorRow:
    task_id: str
    errored_in: list[str]


@dataclass
class Delta:
    """A telemetry figure on the paired rows: each arm's median, and the per-row difference's median and p90."""

    metric: str
    rows: int
    median_baseline: float | None
    median_other: float | None
    median_delta: float | None
    p90_delta: float | None


@dataclass
class GroupStats:
    """The paired figures of a set of rows (all of them, one base task, or one tag)."""

    key: str
    rows: int
    rate_baseline: float | None
    rate_other: float | None
    difference: float | None
    interval: Interval | None
    regressions: int
    improvements: int
    mcnemar_p: float


Reading = Literal["other_better", "baseline_better", "inconclusive"]
Source = Literal["clustered", "bootstrap", "mcnemar"]  # the interval a verdict read, or the exact test alone


@dataclass
class Verdict:
    """What the difference in success rate says: a winner only where McNemar's exact test and the interval agree.

    ``uses`` names the interval read: the one clustered by base task where
    some base task has more than one paired row (its rows are not
    independent), else the paired bootstrap's; an interval of no width
    measured no spread and is not read (``mcnemar``: the exact test alone).
    """

    uses: Source
    interval: Interval | None
    reading: Reading


@dataclass
class SequentialView:
    """The sequential A/B of a run that ran in batches: the decision now, and the sequence after each batch."""

    alpha: float
    margin: float | None
    result: SequentialResult
    steps: list[SequentialStep]


@dataclass
class PairComparison:
    baseline: str
    other: str
    rows: int
    successes_baseline: int
    evaluations_baseline: int
    successes_other: int
    evaluations_other: int
    rate_baseline: float | None
    rate_other: float | None
    interval_baseline: Interval | None
    interval_other: Interval | None
    difference: float | None
    difference_interval: Interval | None
    mcnemar_p: float
    score_difference: float | None
    score_interval: Interval | None
    regressions: list[Flip]
    improvements: list[Flip]
    deltas: list[Delta]
    error_rows: list[ErrorRow]
    error_evaluations: dict[str, int]
    unpaired_rows: int
    difference_clustered: MeanEstimate | None
    score_difference_clustered: MeanEstimate | None
    verdict: Verdict
    sequential: SequentialView | None
    by_task: list[GroupStats] = field(default_factory=list)
    by_tag: list[GroupStats] = field(default_factory=list)


@dataclass
class VariantsLeftOut:
    """Two runs' variants that only one of them ran: they pair with nothing, and are named, not dropped unsaid."""

    first_run_only: list[str]
    second_run_only: list[str]


@dataclass
class Comparison:
    runs: dict[str, str]  # run_id -> run folder
    arms: list[ArmSummary]
    pairs: list[PairComparison]
    flaky_rows: list[FlakyRow]
    variants_left_out: VariantsLeftOut | None = None  # a comparison of two runs only
    seed: int = SEED
    resamples: int = RESAMPLES

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = _json_safe(asdict(self))  # a dict stays a dict
        return document


def _json_safe(value: Any) -> Any:
    """NaN becomes null and numpy scalars plain numbers, so the document is strict JSON."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and np.isnan(value):
        return None
    return value


# ----------------------------------------------------------------------------- one arm


def _mean(values: list[float]) -> float | None:
    """A column's mean as pandas takes it (NaN left out: summed as 0 over the whole array); None without values."""
    array = np.array(values, dtype=float)
    present = ~np.isnan(array)
    count = int(present.sum())
    return float(np.where(present, array, 0.0).sum() / count) if count else None


def _pass_k(rows: list[RowOutcomes], resamples: int) -> list[PassK]:
    """pass@k and pass^k of ``rows`` with row-bootstrap intervals."""
    return pass_k_figures(
        np.array([row.successes for row in rows], dtype=np.int64),
        np.array([row.evaluations for row in rows], dtype=np.int64),
        lambda values: paired_bootstrap_interval(values, resamples),
    )


def _by_base_task(rows: list[RowOutcomes]) -> list[TaskPassK]:
    """pass@k and pass^k of each base task's rows, base tasks in order."""
    ordered = sorted(rows, key=lambda row: row.base_task_id)  # stable: rows stay in task_id order
    return [
        TaskPassK(task, _pass_k(list(task_rows), BREAKDOWN_RESAMPLES))
        for task, task_rows in groupby(ordered, key=lambda row: row.base_task_id)
    ]


def arm_summary(arm: Arm) -> ArmSummary:
    valid, rows = arm.valid, arm.row_outcomes
    evaluations = sum(1 for o in arm.run.outcomes if o.variant_id == arm.variant_id)
    successes = sum(o.success for o in valid)
    clusters = np.array([o.base_task_id for o in valid], dtype=object)
    scores = [o.weighted_score for o in valid]
    return ArmSummary(
        label=arm.label,
        run_id=arm.run.run_id,
        variant_id=arm.variant_id,
        evaluations=evaluations,
        errors=evaluations - len(valid),
        successes=successes,
        success_rate=success_rate(valid),
        interval=wilson_interval(successes, len(valid)),
        mean_score=_mean(scores),
        mean_cost_usd=_mean([o.cost_usd for o in valid]),
        success_clustered=mean_estimate(np.array([o.success for o in valid], dtype=float), clusters, RATE),
        score_clustered=mean_estimate(np.array(scores, dtype=float), clusters, RATE),
        max_replicates=max((row.evaluations for row in rows), default=0),
        pass_k=_pass_k(arm.pass_k_rows, RESAMPLES),
        pass_k_by_task=_by_base_task(arm.pass_k_rows),
    )


def arm_flaky_rows(arm: Arm) -> list[FlakyRow]:
    """The arm's rows whose non-ERROR replicates disagree, by row-task."""
    replicates = [RowReplicates(r.task_id, arm.variant_id, r.successes, r.evaluations) for r in arm.row_outcomes]
    return [FlakyRow(arm.run.run_id, **asdict(row)) for row in flaky_rows(replicates)]


def arm_rows(evaluations: pd.DataFrame) -> pd.DataFrame:
    """One line per non-ERROR row: replicates averaged (ERROR replicates left out)."""
    valid = evaluations[evaluations["final_status"] != ERROR]
    return valid.groupby("task_id", sort=True).agg(
        base_task_id=("base_task_id", "first"),
        tags=("tags", "first"),
        success=("success", "mean"),
        successes=("success", "sum"),
        evaluations=("success", "size"),
        score=("weighted_score", "mean"),
        cost_usd=("cost_usd", "mean"),
        tokens=("tokens", "mean"),
        turns=("turns", "mean"),
        duration_s=("duration_s", "mean"),
        report=("report", "first"),
        batch=(BATCH, "max"),
    )


# ----------------------------------------------------------------------------- a pair of arms


def _rate(frame: pd.DataFrame, column: str) -> float | None:
    """The mean of the rows' success rates: each paired row counts once, as in the paired difference."""
    return float(frame[column].mean()) if len(frame) else None


def _rows_wilson(rates: pd.Series) -> Interval | None:
    """Wilson's interval with the rows as trials: a row's rate, in [0, 1], varies at most as a pass/fail does."""
    return wilson_interval(float(rates.sum()), len(rates))


def group_stats(key: str, paired: pd.DataFrame, resamples: int) -> GroupStats:
    """Rates, paired difference with its bootstrap interval, flips and McNemar p of ``paired`` rows."""
    differences = (paired["success_b"] - paired["success_a"]).to_numpy()
    regressions = int((paired["pass_a"] & ~paired["pass_b"]).sum())
    improvements = int((~paired["pass_a"] & paired["pass_b"]).sum())
    return GroupStats(
        key=key,
        rows=len(paired),
        rate_baseline=_rate(paired, "success_a"),
        rate_other=_rate(paired, "success_b"),
        difference=float(differences.mean()) if len(paired) else None,
        interval=paired_bootstrap_interval(differences, resamples),
        regressions=regressions,
        improvements=improvements,
        mcnemar_p=mcnemar_exact_p(regressions, improvements),
    )


def _flips(paired: pd.DataFrame, mask: pd.Series, runs: tuple[Path, Path]) -> list[Flip]:
    columns = ["base_task_id_a", "score_a", "score_b", "report_a", "report_b"]
    return [
        Flip(
            task_id=str(task_id),
            base_task_id=str(base),
            score_baseline=float(score_a),
            score_other=float(score_b),
            report_baseline=str(runs[0] / report_a),
            report_other=str(runs[1] / report_b),
        )
        for task_id, base, score_a, score_b, report_a, report_b in paired.loc[mask, columns].itertuples()
    ]


def _delta(metric: str, paired: pd.DataFrame) -> Delta:
    both = paired[[f"{metric}_a", f"{metric}_b"]].dropna()
    differences = (both[f"{metric}_b"] - both[f"{metric}_a"]).to_numpy()
    if not len(both):
        return Delta(metric, 0, None, None, None, None)
    return Delta(
        metric=metric,
        rows=len(both),
        median_baseline=float(both[f"{metric}_a"].median()),
        median_other=float(both[f"{metric}_b"].median()),
        median_delta=float(np.median(differences)),
        p90_delta=float(np.percentile(differences, 90)),
    )


def _error_rows(baseline: Arm, other: Arm, paired_ids: pd.Index) -> list[ErrorRow]:
    """Rows present in both arms that did not pair because one arm (or both) had only ERROR."""
    ids = {arm.label: set(arm.evaluations["task_id"]) for arm in (baseline, other)}
    both = ids[baseline.label] & ids[other.label]
    valid = {
        arm.label: set(arm.evaluations.loc[arm.evaluations["final_status"] != ERROR, "task_id"])
        for arm in (baseline, other)
    }
    return [
        ErrorRow(task_id, [label for label in (baseline.label, other.label) if task_id not in valid[label]])
        for task_id in sorted(both - set(paired_ids))
    ]


def _error_count(arm: Arm) -> int:
    return int((arm.evaluations["final_status"] == ERROR).sum())


def _breakdown(paired: pd.DataFrame, column: str) -> list[GroupStats]:
    grouped = paired.explode(column) if column == "tags_a" else paired
    grouped = grouped[grouped[column].notna()]
    return [group_stats(str(key), rows, BREAKDOWN_RESAMPLES) for key, rows in grouped.groupby(column, sort=True)]


def _has_width(interval: Interval | None) -> bool:
    return interval is not None and interval.low < interval.high


def clustered_unread(clustered: MeanEstimate | None) -> str | None:
    """Why the verdict does not read the clustered interval, in words for the reader; None when it does."""
    if clustered is None or not clustered.clustering_matters:
        return "no base task has more than one row"
    if clustered.interval_clustered is None:
        return "one base task only"
    if not _has_width(clustered.interval_clustered):
        return "a clustered interval of no width"
    return None


def _interval_read(bootstrap: Interval | None, clustered: MeanEstimate | None) -> tuple[Source, Interval | None]:
    """The clustered interval where base tasks hold several rows, else the bootstrap's; one of no width is skipped.

    A zero-width interval is no certainty: the bootstrap of identical
    differences, or base tasks whose deviations happen to cancel (a clustered
    SE of exactly 0), measured no spread at all.
    """
    if clustered is not None and clustered_unread(clustered) is None:
        return "clustered", clustered.interval_clustered
    if _has_width(bootstrap):
        return "bootstrap", bootstrap
    return "mcnemar", None


def _side(interval: Interval) -> Reading:
    return "other_better" if interval.low > 0 else "baseline_better" if interval.high < 0 else "inconclusive"


def verdict(bootstrap: Interval | None, clustered: MeanEstimate | None, regressions: int, improvements: int) -> Verdict:
    """A winner when McNemar's exact p is below 0.05 and the interval read (if any has width) lies on the same side.

    The exact test is valid at any number of rows, the interval accounts for
    base tasks and for replicates' shares; either alone called winners on two
    rows. The regression check (``no_significant_regression``) reads this same
    verdict, so the two never disagree.
    """
    uses, interval = _interval_read(bootstrap, clustered)
    tested: Reading = "inconclusive"
    if mcnemar_exact_p(regressions, improvements) < ALPHA:
        tested = "other_better" if improvements > regressions else "baseline_better"
    agrees = interval is None or _side(interval) == tested
    return Verdict(uses, interval, tested if agrees else "inconclusive")


def sequential_view(paired: pd.DataFrame, settings: SequentialSettings) -> SequentialView | None:
    """The confidence sequence over the batches the paired rows ran in; None when the run recorded no batches."""
    batched = paired.assign(batch=paired[["batch_a", "batch_b"]].max(axis=1)).dropna(subset=["batch"])
    if batched.empty:
        return None
    batched = batched.sort_values(["batch"], kind="stable")
    differences = (batched["success_b"] - batched["success_a"]).to_numpy()
    batches = batched["batch"].to_numpy(dtype=int)
    return SequentialView(
        alpha=settings.alpha,
        margin=settings.margin,
        result=sequential_decision(differences, batches, settings.alpha, settings.margin),
        steps=sequence_over_batches(differences, batches, settings.alpha, settings.margin),
    )


def compare_pair(baseline: Arm, other: Arm) -> PairComparison:
    """Every figure of ``other`` against ``baseline`` on their paired rows."""
    rows_a, rows_b = baseline.rows, other.rows
    paired = rows_a.merge(rows_b, how="inner", left_index=True, right_index=True, suffixes=("_a", "_b"))
    paired["pass_a"] = paired["success_a"] > 0.5
    paired["pass_b"] = paired["success_b"] > 0.5
    overall = group_stats("all", paired, RESAMPLES)
    differences = (paired["success_b"] - paired["success_a"]).to_numpy()
    scores = (paired["score_b"] - paired["score_a"]).to_numpy()
    clusters = paired["base_task_id_a"].to_numpy()
    difference_clustered = mean_estimate(differences, clusters, DIFFERENCE)
    runs = (baseline.run.run_dir, other.run.run_dir)
    one_arm_only = set(baseline.evaluations["task_id"]) ^ set(other.evaluations["task_id"])
    return PairComparison(
        baseline=baseline.label,
        other=other.label,
        rows=overall.rows,
        successes_baseline=int(paired["successes_a"].sum()),
        evaluations_baseline=int(paired["evaluations_a"].sum()),
        successes_other=int(paired["successes_b"].sum()),
        evaluations_other=int(paired["evaluations_b"].sum()),
        rate_baseline=overall.rate_baseline,
        rate_other=overall.rate_other,
        interval_baseline=_rows_wilson(paired["success_a"]),
        interval_other=_rows_wilson(paired["success_b"]),
        difference=overall.difference,
        difference_interval=overall.interval,
        mcnemar_p=overall.mcnemar_p,
        score_difference=float(scores.mean()) if len(scores) else None,
        score_interval=paired_bootstrap_interval(scores),
        regressions=_flips(paired, paired["pass_a"] & ~paired["pass_b"], runs),
        improvements=_flips(paired, ~paired["pass_a"] & paired["pass_b"], runs),
        deltas=[_delta(metric, paired) for metric in DELTA_METRICS],
        error_rows=_error_rows(baseline, other, paired.index),
        error_evaluations={arm.label: _error_count(arm) for arm in (baseline, other)},
        unpaired_rows=len(one_arm_only),
        difference_clustered=difference_clustered,
        score_difference_clustered=mean_estimate(scores, clusters, DIFFERENCE),
        verdict=verdict(overall.interval, difference_clustered, overall.regressions, overall.improvements),
        sequential=sequential_view(paired, baseline.run.sequential) if baseline.run is other.run else None,
        by_task=_breakdown(paired, "base_task_id_a"),
        by_tag=_breakdown(paired, "tags_a"),
    )


@dataclass
class PairedFlips:
    """A pair's difference in success rate, McNemar p, flipped rows (task ids) and verdict: what the regression
    check reads."""

    difference: float | None
    mcnemar_p: float
    regressions: list[str]
    improvements: list[str]
    verdict: Verdict


def paired_flips(baseline: Arm, other: Arm) -> PairedFlips:
    """``compare_pair``'s overall difference, McNemar p, flips and verdict from plain values: no pandas, same numbers.

    Rows pair in task_id order (the frames' merge order), so the differences
    are summed, resampled and clustered as they were there.
    """
    rows_other = {row.task_id: row for row in other.row_outcomes}
    paired = [(row, rows_other[row.task_id]) for row in baseline.row_outcomes if row.task_id in rows_other]
    differences = np.array([b.success - a.success for a, b in paired], dtype=float)
    clusters = np.array([a.base_task_id for a, _ in paired], dtype=object)
    regressions = [a.task_id for a, b in paired if a.success > 0.5 and not b.success > 0.5]
    improvements = [a.task_id for a, b in paired if not a.success > 0.5 and b.success > 0.5]
    return PairedFlips(
        difference=float(differences.mean()) if paired else None,
        mcnemar_p=mcnemar_exact_p(len(regressions), len(improvements)),
        regressions=regressions,
        improvements=improvements,
        verdict=verdict(
            paired_bootstrap_interval(differences),
            mean_estimate(differences, clusters, DIFFERENCE),
            len(regressions),
            len(improvements),
        ),
    )


# ----------------------------------------------------------------------------- runs


def _arm(run: RunRows, variant_id: str, label: str | None = None) -> Arm:
    return Arm(run, variant_id, label or variant_id)


def compare_variants(run: RunRows, baseline: str | None = None) -> Comparison:
    """Every variant of one run against the baseline (default: the experiment's first variant)."""
    baseline = baseline or run.variants[0]
    if baseline not in run.variants:
        raise CompareError(f"{run.run_dir}: no variant {baseline!r} (variants: {', '.join(run.variants)})")
    base = _arm(run, baseline)
    others = [_arm(run, v) for v in run.variants if v != baseline]
    return Comparison(
        runs={run.run_id: str(run.run_dir)},
        arms=[arm_summary(a) for a in [base, *others]],
        pairs=[compare_pair(base, other) for other in others],
        flaky_rows=[row for arm in [base, *others] for row in arm_flaky_rows(arm)],
    )


def shared_variants(before: RunRows, after: RunRows, variant: str | None = None) -> list[str]:
    """The variants both runs ran, in ``after``'s order (``variant`` alone when given); CompareError if none."""
    shared = [v for v in after.variants if v in set(before.variants)]
    if variant is not None:
        if variant not in shared:
            raise CompareError(f"variant {variant!r} is not in both runs (shared: {', '.join(shared) or 'none'})")
        shared = [variant]
    if not shared:
        raise CompareError(f"{before.run_id} and {after.run_id} share no variant")
    return shared


def one_run_only(before: RunRows, after: RunRows) -> VariantsLeftOut:
    """The variants each run ran and the other did not, each in its run's order."""
    return VariantsLeftOut(
        first_run_only=[v for v in before.variants if v not in after.variants],
        second_run_only=[v for v in after.variants if v not in before.variants],
    )


def run_names(before: RunRows, after: RunRows) -> tuple[str, str]:
    """The two runs' names in labels and keys: their ids, told apart when the ids are the same (two runs folders'
    runs started in the same second, or a copy of a run) by their runs folders, else by their order."""
    if before.run_id != after.run_id:
        return before.run_id, after.run_id
    parents = before.run_dir.parent.name, after.run_dir.parent.name
    if parents[0] != parents[1]:
        return f"{parents[0]}/{before.run_id}", f"{parents[1]}/{after.run_id}"
    return f"{before.run_id}#1", f"{after.run_id}#2"


def compare_runs(before: RunRows, after: RunRows, variant: str | None = None) -> Comparison:
    """The same variants of two runs, paired by (task_id, variant_id): ``after`` against ``before``."""
    shared = shared_variants(before, after, variant)
    first, second = run_names(before, after)
    pairs = [(_arm(before, v, f"{v}@{first}"), _arm(after, v, f"{v}@{second}")) for v in shared]
    arms = [arm for pair in pairs for arm in pair]
    return Comparison(
        runs={first: str(before.run_dir), second: str(after.run_dir)},
        arms=[arm_summary(arm) for arm in arms],
        pairs=[compare_pair(a, b) for a, b in pairs],
        flaky_rows=[row for arm in arms for row in arm_flaky_rows(arm)],
        variants_left_out=one_run_only(before, after),
    )
