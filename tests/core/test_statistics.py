"""Repeated trials, clustered errors and the sequential A/B: hand-computed cases, reference computations, simulations."""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from coder_eval_dagster.core.compare.analysis import compare_variants
from coder_eval_dagster.core.compare.clustered import DIFFERENCE, RATE, clustered_se, mean_estimate, unclustered_se
from coder_eval_dagster.core.compare.render import render_markdown
from coder_eval_dagster.core.compare.replicates import pass_at_k, pass_hat_k, pass_k_figures
from coder_eval_dagster.core.compare.rows import read_run_rows
from coder_eval_dagster.core.compare.run_statistics import replicate_summary
from coder_eval_dagster.core.compare.sequential import (
    decisions_by_batch,
    plan_batches,
    sequence_over_batches,
    sequential_decision,
)

from ..support.paired_outcomes import add_batches, batch_numbers, paired_outcomes
from ..support.synthetic_runs import evaluation, evaluation_result, write_run

# ----------------------------------------------------------------------------- pass@k and pass^k


def test_pass_at_k_and_pass_hat_k_of_hand_computed_rows() -> None:
    # n = 5 replicates, c = 2 passed, k = 2: 1 - C(3, 2) / C(5, 2) = 1 - 3/10; C(2, 2) / C(5, 2) = 1/10
    assert pass_at_k(np.array([2]), np.array([5]), 2)[0] == pytest.approx(0.7)
    assert pass_hat_k(np.array([2]), np.array([5]), 2)[0] == pytest.approx(0.1)
    # k = 3 of n = 4, c = 3: 1 - C(1, 3) / C(4, 3) = 1 (n - c < k); C(3, 3) / C(4, 3) = 1/4
    assert pass_at_k(np.array([3]), np.array([4]), 3)[0] == 1.0
    assert pass_hat_k(np.array([3]), np.array([4]), 3)[0] == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("passes", "replicates", "k", "at", "hat"),
    [
        (0, 4, 2, 0.0, 0.0),  # c = 0: never
        (4, 4, 3, 1.0, 1.0),  # c = n: always
        (1, 3, 3, 1.0, 0.0),  # k = n with a pass: some pass; not all
        (3, 3, 3, 1.0, 1.0),  # k = n, all pass
        (0, 3, 3, 0.0, 0.0),  # k = n, none pass
        (3, 4, 2, 1.0, 0.5),  # n - c = 1 < k: any 2 include a pass; C(3, 2) / C(4, 2) = 1/2
        (2, 5, 1, 0.4, 0.4),  # k = 1: c / n
    ],
)
def test_the_estimators_edge_cases(passes: int, replicates: int, k: int, at: float, hat: float) -> None:
    assert pass_at_k(np.array([passes]), np.array([replicates]), k)[0] == pytest.approx(at)
    assert pass_hat_k(np.array([passes]), np.array([replicates]), k)[0] == pytest.approx(hat)


def test_fewer_replicates_than_k_has_no_value() -> None:
    assert np.isnan(pass_at_k(np.array([1]), np.array([2]), 3)[0])
    assert np.isnan(pass_hat_k(np.array([2]), np.array([2]), 3)[0])


def test_every_small_case_matches_the_binomial_coefficients_exactly() -> None:
    cases = [(c, n, k) for n in range(1, 9) for c in range(n + 1) for k in range(1, n + 1)]
    passes, replicates = np.array([c for c, _, _ in cases]), np.array([n for _, n, _ in cases])
    for k in range(1, 9):
        chosen = np.array([case[2] == k for case in cases])
        at = pass_at_k(passes[chosen], replicates[chosen], k)
        hat = pass_hat_k(passes[chosen], replicates[chosen], k)
        for (c, n, _), a, h in zip([case for case in cases if case[2] == k], at, hat, strict=True):
            assert a == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)
            assert h == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-12)


def test_large_replicate_counts_stay_finite_and_exact() -> None:
    # C(1000, 500) overflows a float; the product form does not
    at = pass_at_k(np.array([3]), np.array([1000]), 500)[0]
    assert at == pytest.approx(1 - math.comb(997, 500) / math.comb(1000, 500), rel=1e-12)
    assert pass_hat_k(np.array([999]), np.array([1000]), 500)[0] == pytest.approx(0.5)  # C(999,500)/C(1000,500)


def test_figures_per_k_leave_out_rows_with_fewer_replicates_and_say_how_many() -> None:
    # rows: 1 of 1, 2 of 3, 3 of 3, 0 of 2
    figures = pass_k_figures(np.array([1, 2, 3, 0]), np.array([1, 3, 3, 2]))
    assert [(f.k, f.rows, f.rows_left_out) for f in figures] == [(1, 4, 0), (2, 3, 1), (3, 2, 2)]
    one, two, three = figures
    mean_success_rate = (1 + 2 / 3 + 1 + 0) / 4
    assert one.pass_at_k == pytest.approx(mean_success_rate) and one.pass_hat_k == pytest.approx(mean_success_rate)
    assert two.pass_at_k == pytest.approx((1 + 1 + 0) / 3)  # 2 of 3: any pair holds a pass
    assert two.pass_hat_k == pytest.approx((1 / 3 + 1 + 0) / 3)  # C(2,2)/C(3,2) = 1/3
    assert (three.pass_at_k, three.pass_hat_k) == (pytest.approx(1.0), pytest.approx(0.5))
    assert all(f.pass_at_k_interval is None for f in figures)


def test_the_run_summary_figures_and_flaky_rows() -> None:
    statuses = {
        ("a", "t1"): ["SUCCESS", "FAILED", "SUCCESS"],  # flaky, 2 of 3
        ("a", "t2"): ["SUCCESS", "SUCCESS", "ERROR"],  # ERROR left out: 2 of 2, not flaky
        ("b", "t1"): ["FAILED", "FAILED", "FAILED"],
        ("b", "t2"): ["FAILED", "ERROR", "SUCCESS"],  # flaky, 1 of 2
    }
    results = [
        evaluation_result(variant, task, status, replicate=index + 1)
        for (variant, task), outcomes in statuses.items()
        for index, status in enumerate(outcomes)
    ]
    summary = replicate_summary(results)
    assert summary["pass_at_k"] == {
        "a": {"1": pytest.approx((2 / 3 + 1) / 2), "2": pytest.approx(1.0), "3": pytest.approx(1.0)},
        "b": {"1": pytest.approx(0.25), "2": pytest.approx(0.5), "3": pytest.approx(0.0)},
    }
    assert summary["pass_hat_k"] == {
        "a": {"1": pytest.approx((2 / 3 + 1) / 2), "2": pytest.approx((1 / 3 + 1) / 2), "3": pytest.approx(0.0)},
        "b": {"1": pytest.approx(0.25), "2": pytest.approx(0.0), "3": pytest.approx(0.0)},
    }
    assert summary["flaky_rows"] == [
        {"task_id": "t1", "variant_id": "a", "passes": 2, "replicates": 3},
        {"task_id": "t2", "variant_id": "b", "passes": 1, "replicates": 2},
    ]


# ----------------------------------------------------------------------------- clustered standard errors


def sandwich_se(design: np.ndarray, outcome: np.ndarray, clusters: np.ndarray, coefficient: int) -> float:
    """The reference: OLS with the cluster-robust sandwich, (X'X)^-1 (sum_g X_g' e_g e_g' X_g) (X'X)^-1 x G/(G-1)."""
    bread = np.linalg.inv(design.T @ design)
    residuals = outcome - design @ (bread @ design.T @ outcome)
    membership = (clusters[:, None] == np.unique(clusters)[None, :]).astype(float)  # n x G
    scores = membership.T @ (design * residuals[:, None])  # G x K: each cluster's score
    groups = membership.shape[1]
    variance = groups / (groups - 1) * bread @ (scores.T @ scores) @ bread
    return float(np.sqrt(variance[coefficient, coefficient]))


def test_clustered_se_of_a_mean_is_the_sandwich_of_a_regression_on_a_constant() -> None:
    rng = np.random.default_rng(7)
    clusters = rng.integers(0, 12, size=300)
    values = (rng.random(300) < 0.3 + 0.04 * clusters).astype(float)  # success depends on the task
    reference = sandwich_se(np.ones((300, 1)), values, clusters, 0)
    assert clustered_se(values, clusters) == pytest.approx(reference, rel=1e-10)
    assert clustered_se(values, clusters.astype(str)) == pytest.approx(reference, rel=1e-10)  # any labels


def test_clustered_se_of_paired_differences_is_the_arm_coefficients_sandwich() -> None:
    """Both arms' rows stacked, y = b0 + b1 * other, clustered by task: b1 is the mean paired difference."""
    rng = np.random.default_rng(11)
    rows, clusters = 240, rng.integers(0, 15, size=240)
    difficulty = rng.random(15)[clusters]
    baseline = (rng.random(rows) < difficulty).astype(float)
    other = (rng.random(rows) < np.minimum(1, difficulty + 0.1)).astype(float)
    design = np.column_stack([np.ones(2 * rows), np.r_[np.zeros(rows), np.ones(rows)]])
    reference = sandwich_se(design, np.r_[baseline, other], np.r_[clusters, clusters], 1)
    assert clustered_se(other - baseline, clusters) == pytest.approx(reference, rel=1e-10)


def test_unclustered_se_is_the_textbook_one_and_clustering_can_widen_it_severalfold() -> None:
    rng = np.random.default_rng(3)
    values = rng.random(50)
    assert unclustered_se(values) == pytest.approx(values.std(ddof=1) / math.sqrt(50))
    # 10 tasks of 20 rows each, every row of a task with the same outcome: clustering matters
    clusters = np.repeat(np.arange(10), 20)
    outcomes = np.repeat((np.arange(10) < 5).astype(float), 20)
    estimate = mean_estimate(outcomes, clusters, RATE)
    assert estimate is not None and estimate.clustering_matters
    assert estimate.se_clustered > 4 * estimate.se  # type: ignore[operator]
    t_9 = stats.t.ppf(0.975, 9)  # 10 tasks: t with 9 degrees of freedom
    assert estimate.interval_clustered.low == pytest.approx(0.5 - t_9 * estimate.se_clustered)  # type: ignore[union-attr,operator]


def test_one_cluster_or_no_values_give_no_clustered_error() -> None:
    estimate = mean_estimate(np.array([1.0, 0.0, 1.0]), np.array(["t", "t", "t"]), RATE)
    assert estimate is not None and estimate.se_clustered is None and estimate.interval_clustered is None
    assert estimate.se is not None
    assert mean_estimate(np.array([]), np.array([]), RATE) is None


def test_a_clustered_interval_stays_within_what_a_rate_or_a_difference_can_be() -> None:
    """Two tasks of ten rows, one passing whole and one failing whole: 0.5 +- 1.96 x 0.5 reaches past 0 and 1."""
    outcomes, clusters = np.repeat([1.0, 0.0], 10), np.repeat(["a", "b"], 10)
    rate = mean_estimate(outcomes, clusters, RATE)
    assert rate is not None and rate.se_clustered == pytest.approx(0.5)
    assert (rate.interval_clustered.low, rate.interval_clustered.high) == (0.0, 1.0)  # type: ignore[union-attr]
    difference = mean_estimate(np.repeat([1.0, -1.0], 10), clusters, DIFFERENCE)
    assert (difference.interval_clustered.low, difference.interval_clustered.high) == (-1.0, 1.0)  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- the sequential A/B


@pytest.mark.parametrize(
    ("rates", "rows", "batch_rows"),
    [((0.6, 0.6), 200, 10), ((0.5, 0.5), 1000, 25), ((0.9, 0.9), 400, 1)],
    ids=["200-rows-batches-of-10", "1000-rows-batches-of-25", "peeking-after-every-row"],
)
def test_a_over_a_experiments_peeking_at_every_batch_keep_the_false_positive_rate_below_alpha(
    rates: tuple[float, float], rows: int, batch_rows: int
) -> None:
    experiments = 4000
    differences = paired_outcomes(np.random.default_rng(rows), (experiments, rows), *rates)
    decisions = decisions_by_batch(differences, batch_numbers(rows, batch_rows), alpha=0.05)
    ever_decided = (decisions != "undecided").any(axis=1)
    assert ever_decided.mean() <= 0.05
    # decisions are kept once reached (the running intersection): the last batch holds every false decision
    assert np.array_equal(ever_decided, decisions[:, -1] != "undecided")


def test_a_clear_difference_stops_in_a_fraction_of_the_fixed_design() -> None:
    experiments, rows, batch_rows = 2000, 1000, 20
    differences = paired_outcomes(np.random.default_rng(5), (experiments, rows), 0.5, 0.7)
    decisions = decisions_by_batch(differences, batch_numbers(rows, batch_rows))
    decided = decisions != "undecided"
    assert (decisions[:, -1] == "other_better").mean() >= 0.99 and not (decisions == "baseline_better").any()
    rows_run = np.where(decided.any(axis=1), decided.argmax(axis=1) + 1, rows // batch_rows) * batch_rows
    assert rows_run.mean() < 0.3 * rows  # the fixed design runs all 1,000


def test_equivalence_is_declared_wrongly_at_most_alpha_of_the_time_at_the_margin() -> None:
    experiments, rows, margin = 2000, 2000, 0.1
    truth_at_margin = paired_outcomes(np.random.default_rng(9), (experiments, rows), 0.5, 0.6, spread=0.0)
    at_margin = decisions_by_batch(truth_at_margin, batch_numbers(rows, 50), margin=margin)
    assert (at_margin == "equivalent").any(axis=1).mean() <= 0.05
    truly_equal = paired_outcomes(np.random.default_rng(10), (200, rows), 0.5, 0.5)
    assert (decisions_by_batch(truly_equal, batch_numbers(rows, 50), margin=margin)[:, -1] == "equivalent").mean() > 0.8


def test_one_decision_agrees_with_the_simulations_and_its_interval() -> None:
    differences = paired_outcomes(np.random.default_rng(2), (30, 300), 0.4, 0.65)
    batches = batch_numbers(300, 30)
    vectorized = decisions_by_batch(differences, batches)
    for row, decisions in zip(differences, vectorized, strict=True):
        result = sequential_decision(row, batches)
        assert result.decision == decisions[-1] and (result.rows, result.batches) == (300, 10)
        assert (result.interval.low >= 0) == (result.decision == "other_better")
        if result.decided_at_batch is not None:
            assert decisions[result.decided_at_batch - 1] == result.decision
            assert result.decided_at_batch == 1 or decisions[result.decided_at_batch - 2] == "undecided"


def test_the_sequence_over_batches_narrows_and_ends_where_the_decision_stands() -> None:
    differences = paired_outcomes(np.random.default_rng(4), (1, 400), 0.3, 0.8)[0]
    batches = batch_numbers(400, 40)
    steps = sequence_over_batches(differences, batches)
    assert [s.batch for s in steps] == list(range(1, 11)) and [s.rows for s in steps] == list(range(40, 401, 40))
    for before, after in itertools.pairwise(steps):
        assert before.interval.low <= after.interval.low and after.interval.high <= before.interval.high
    final = sequential_decision(differences, batches)
    assert steps[-1].interval == final.interval and steps[-1].decision == final.decision == "other_better"
    assert final.interval.low <= differences.mean() <= final.interval.high


def test_rows_inside_a_batch_may_come_in_any_order() -> None:
    differences = paired_outcomes(np.random.default_rng(6), (1, 120), 0.5, 0.7)[0]
    batches = batch_numbers(120, 30)
    shuffled = np.concatenate([np.random.default_rng(1).permutation(part) for part in np.split(differences, 4)])
    assert sequential_decision(shuffled, batches) == sequential_decision(differences, batches)


def test_the_sequential_inputs_are_checked() -> None:
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        sequential_decision([0.5, 2.0])
    with pytest.raises(ValueError, match="batch order"):
        sequential_decision([1, 0, 1], [1, 2, 1])
    with pytest.raises(ValueError, match="alpha"):
        sequential_decision([1, 0], alpha=1.5)
    assert sequential_decision([]).decision == "undecided"


def test_the_batch_plan_is_seeded_complete_and_capped() -> None:
    ids = [f"task/{i:03d}" for i in range(100)]
    plan = plan_batches(ids, seed=42, batch_rows=10, min_rows=25, max_rows=80)
    assert [len(batch) for batch in plan.batches] == [25, 10, 10, 10, 10, 10, 5]
    planned = [row for batch in plan.batches for row in batch]
    assert sorted(planned + plan.beyond_max_rows) == ids and len(set(planned)) == 80
    assert plan == plan_batches(list(reversed(ids)), seed=42, batch_rows=10, min_rows=25, max_rows=80)
    assert planned != sorted(planned)  # a random order, not the ids'
    assert plan_batches(ids, seed=43, batch_rows=10).batches != plan_batches(ids, seed=42, batch_rows=10).batches
    with pytest.raises(ValueError):
        plan_batches(ids, seed=1, batch_rows=0)


# ----------------------------------------------------------------------------- in the comparison

DAY = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)


def test_compare_shows_the_sequence_when_the_run_recorded_batches(tmp_path: Path) -> None:
    differences = paired_outcomes(np.random.default_rng(8), (1, 120), 0.3, 0.6)[0]
    rows = [f"set/{i:03d}" for i in range(120)]
    evaluations = []
    for task_id, difference in zip(rows, differences, strict=True):
        evaluations.append(evaluation("a", task_id, "FAILED" if difference > 0 else "SUCCESS"))
        evaluations.append(evaluation("b", task_id, "SUCCESS" if difference >= 0 else "FAILED"))
    run = write_run(tmp_path, DAY, evaluations)
    without = compare_variants(read_run_rows(run)).pairs[0]
    assert without.sequential is None and "Sequential A/B" not in render_markdown(compare_variants(read_run_rows(run)))
    add_batches(tmp_path, {task_id: i // 20 + 1 for i, task_id in enumerate(rows)})
    comparison = compare_variants(read_run_rows(run))
    (pair,) = comparison.pairs
    assert pair.sequential is not None and [s.rows for s in pair.sequential.steps] == list(range(20, 121, 20))
    assert pair.sequential.result == sequential_decision(differences, batch_numbers(120, 20))
    assert "Sequential A/B: the anytime-valid confidence sequence after each batch" in render_markdown(comparison)
