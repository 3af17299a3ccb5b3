"""A pair's verdict and the nightly check read one rule; a pair's rates, difference and breakdowns one definition.

Expectations are computed apart from the code: McNemar's p with scipy's
binomial test, critical values with scipy's Student t, rates with pandas.
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from coder_eval_dagster.core.compare import clustered
from coder_eval_dagster.core.compare.analysis import PairComparison, compare_runs, compare_variants
from coder_eval_dagster.core.compare.clustered import DIFFERENCE, mean_estimate
from coder_eval_dagster.core.compare.regression import regression_verdict
from coder_eval_dagster.core.compare.render import render_markdown
from coder_eval_dagster.core.compare.rows import RunRows, read_run_rows

from ..support.synthetic_runs import evaluation, write_run

DAY = datetime(2026, 12, 5, 2, 0, tzinfo=UTC)
STATUS = {"S": "SUCCESS", "F": "FAILURE", "E": "ERROR"}
Outcomes = dict[str, dict[str, str]]  # variant -> task_id -> one letter per replicate (S, F, E)


def run_of(folder: Path, outcomes: Outcomes, day: int = 1) -> RunRows:
    rows = [
        evaluation(variant, task_id, STATUS[letter], replicate)
        for variant, tasks in outcomes.items()
        for task_id, letters in tasks.items()
        for replicate, letter in enumerate(letters)
    ]
    return read_run_rows(write_run(folder, DAY.replace(day=day), rows))


def pair_of(folder: Path, outcomes: Outcomes) -> PairComparison:
    (pair,) = compare_variants(run_of(folder, outcomes)).pairs
    return pair


def exact_p(regressions: int, improvements: int) -> float:
    flips = regressions + improvements
    return 1.0 if flips == 0 else float(stats.binomtest(improvements, flips).pvalue)


# ----------------------------------------------------------------------------- the t critical value


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 9, 10, 29, 30, 101, 1000, 54_321])
@pytest.mark.parametrize("probability", [0.975, 0.95, 0.995])
def test_the_t_quantile_is_scipys(df: int, probability: float) -> None:
    assert clustered.t_quantile(probability, df) == pytest.approx(stats.t.ppf(probability, df), rel=1e-10)


@pytest.mark.parametrize("groups", [2, 3, 5, 12])
def test_the_clustered_interval_reads_t_with_one_degree_of_freedom_fewer_than_the_clusters(groups: int) -> None:
    rng = np.random.default_rng(groups)
    clusters = np.repeat(np.arange(groups), 6)
    values = rng.normal(0.1, 0.02, clusters.size) + 0.01 * clusters  # far from the span's ends: nothing cut
    estimate = mean_estimate(values, clusters, DIFFERENCE)
    assert estimate is not None and estimate.interval_clustered is not None and estimate.interval is not None
    sums = np.array([np.sum(values[clusters == g] - values.mean()) for g in range(groups)])
    se_clustered = np.sqrt(groups / (groups - 1) * np.sum(sums**2)) / values.size
    half = stats.t.ppf(0.975, groups - 1) * se_clustered
    assert (estimate.interval_clustered.low, estimate.interval_clustered.high) == pytest.approx(
        (values.mean() - half, values.mean() + half), rel=1e-9
    )
    half = stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / np.sqrt(values.size)
    assert (estimate.interval.low, estimate.interval.high) == pytest.approx(
        (values.mean() - half, values.mean() + half), rel=1e-9
    )


# ----------------------------------------------------------------------------- zero-width intervals never decide


def test_two_tasks_whose_deviations_cancel_have_no_clustered_verdict(tmp_path: Path) -> None:
    """Two base tasks of four rows; A fails every row, B passes one row of each: SE_clustered is exactly 0."""
    a = {f"c{t}/x{i}": "F" for t in (1, 2) for i in range(1, 5)}
    b = {task_id: "S" if task_id.endswith("x1") else "F" for task_id in a}
    pair = pair_of(tmp_path, {"A": a, "B": b})
    assert pair.difference_clustered is not None
    assert pair.difference_clustered.se_clustered == pytest.approx(0.0, abs=1e-15)
    assert pair.mcnemar_p == pytest.approx(exact_p(0, 2)) == pytest.approx(0.5)
    assert pair.difference_interval is not None and pair.difference_interval.low <= 0 < pair.difference_interval.high
    assert (pair.verdict.uses, pair.verdict.interval, pair.verdict.reading) == (
        "bootstrap",
        pair.difference_interval,
        "inconclusive",
    )


def test_deviations_that_cancel_only_up_to_rounding_have_no_clustered_verdict_either(tmp_path: Path) -> None:
    """Two base tasks of 8 rows, 3 replicates: six rows 2/3 -> 1/3, one 0 -> 1, one 1 -> 1 in each. Both tasks'
    mean difference is -1/8, so SE_clustered is 0 in exact arithmetic; in floating point the sums of thirds left
    ~1e-17, an interval 1e-15 wide read as certain (baseline_better at McNemar p = 0.013)."""
    a = {f"k{t}/r{i}": "SSF" if i < 6 else "FFF" if i == 6 else "SSS" for t in (1, 2) for i in range(8)}
    b = {task_id: "SFF" if letters == "SSF" else "SSS" for task_id, letters in a.items()}
    pair = pair_of(tmp_path, {"A": a, "B": b})
    assert pair.mcnemar_p == pytest.approx(exact_p(12, 2)) == pytest.approx(0.012939453125)
    assert pair.difference_clustered is not None and pair.difference_clustered.se_clustered == 0.0
    assert pair.difference_interval is not None and pair.difference_interval.low < 0 < pair.difference_interval.high
    assert (pair.verdict.uses, pair.verdict.reading) == ("bootstrap", "inconclusive")


@pytest.mark.parametrize("rows", [2, 5, 6, 9])
def test_rows_that_all_improved_alike_are_decided_by_the_exact_test_alone(tmp_path: Path, rows: int) -> None:
    """Every difference +1: the bootstrap interval is one point, not read; McNemar's p decides (p < 0.05 from 6 rows)."""
    pair = pair_of(tmp_path, {"A": {f"t/r{i}": "F" for i in range(rows)}, "B": {f"t/r{i}": "S" for i in range(rows)}})
    assert pair.difference_interval is not None and pair.difference_interval.low == pair.difference_interval.high
    assert pair.verdict.uses == "mcnemar" and pair.verdict.interval is None
    decisive = exact_p(0, rows) < 0.05
    assert pair.verdict.reading == ("other_better" if decisive else "inconclusive")


@pytest.mark.parametrize(("regressed", "reading"), [(5, "inconclusive"), (6, "baseline_better")])
def test_compare_and_the_nightly_check_agree_on_a_regression(tmp_path: Path, regressed: int, reading: str) -> None:
    """Rows regress one by one out of 8: 5 (McNemar p = 1/16) is not a regression for either; 6 (p = 1/32) is."""
    before = run_of(tmp_path, {"v": {f"t/r{i}": "S" for i in range(8)}}, day=1)
    after = run_of(tmp_path, {"v": {f"t/r{i}": "F" if i < regressed else "S" for i in range(8)}}, day=2)
    (pair,) = compare_runs(before, after).pairs
    assert pair.mcnemar_p == pytest.approx(exact_p(regressed, 0))
    assert pair.verdict.reading == reading
    check = regression_verdict(before, after)
    assert check.passed == (reading != "baseline_better") and check.details["v.verdict"] == reading


def random_outcomes(rng: random.Random, shifts: dict[str, float]) -> Outcomes:
    """Three replicates of 30 rows in 4 base tasks; each variant's success chance moved by its shift; some ERROR."""
    outcomes: Outcomes = {}
    for variant, shift in shifts.items():
        outcomes[variant] = {}
        for row in range(30):
            chance = min(1.0, max(0.0, (row % 4) / 4 + 0.1 + shift))
            letters = ["E" if rng.random() < 0.05 else "S" if rng.random() < chance else "F" for _ in range(3)]
            outcomes[variant][f"task{row % 4}/r{row}"] = "".join(letters)
    return outcomes


@pytest.mark.parametrize("seed", range(12))
def test_every_verdict_needs_the_exact_test_and_an_interval_with_width_on_its_side(tmp_path: Path, seed: int) -> None:
    """compare's verdict and the nightly check, on the same pairs, from the same rule."""
    rng = random.Random(seed)
    before = run_of(tmp_path, random_outcomes(rng, {"same": 0.3, "worse": 0.5, "better": 0.0}), day=1)
    after = run_of(tmp_path, random_outcomes(rng, {"same": 0.3, "worse": -0.1, "better": 0.5}), day=2)
    check = regression_verdict(before, after)
    pairs = compare_runs(before, after).pairs
    for pair in pairs:
        variant = pair.other.split("@")[0]
        assert check.details[f"{variant}.verdict"] == pair.verdict.reading
        if pair.verdict.reading == "inconclusive":
            continue
        regressions, improvements = len(pair.regressions), len(pair.improvements)
        assert exact_p(regressions, improvements) < 0.05
        interval = pair.verdict.interval
        assert interval is not None and interval.low < interval.high
        assert (interval.low > 0 and improvements > regressions) or (interval.high < 0 and regressions > improvements)
    assert check.passed == all(pair.verdict.reading != "baseline_better" for pair in pairs)


# ----------------------------------------------------------------------------- one definition of a pair's rates

DESIGN = {  # the reviewer's design: rows with 4 replicates, some ERROR (a row ERROR in one arm does not pair)
    "A": {
        "ab/r01": "SSSS", "ab/r02": "SSSF", "ab/r03": "SSFF", "ab/r04": "FFFF", "ab/r05": "FFFF", "ab/r06": "SESF",
        "ab/r07": "SFSF", "ab/r08": "FFFS", "ab2/s01": "SSSS", "ab2/s02": "SSSS", "ab2/s03": "FFFF",
        "ab2/s04": "SSSS", "ab2/s05": "FSFF", "ab2/s06": "EEEE",
    },
    "B": {
        "ab/r01": "SSSS", "ab/r02": "FFFF", "ab/r03": "SSSF", "ab/r04": "SSSS", "ab/r05": "FFFF", "ab/r06": "SSSS",
        "ab/r07": "EEEE", "ab/r08": "SSFS", "ab2/s01": "SSSS", "ab2/s02": "SFSS", "ab2/s03": "SFFF",
        "ab2/s04": "FFFF", "ab2/s05": "SSSS", "ab2/s06": "SSSS",
    },
}  # fmt: skip


def paired_row_rates(outcomes: Outcomes) -> pd.DataFrame:
    """What a pandas user does with task_results: ERROR out, replicates averaged per row, rows both arms have."""
    frame = pd.DataFrame(
        [
            {"variant_id": v, "task_id": t, "base_task_id": t.split("/")[0], "success": letter == "S"}
            for v, tasks in outcomes.items()
            for t, letters in tasks.items()
            for letter in letters
            if letter != "E"
        ]
    )
    rows = frame.groupby(["base_task_id", "task_id", "variant_id"])["success"].mean().unstack("variant_id")
    return rows.dropna()


def test_a_pairs_rates_difference_and_breakdowns_are_means_over_its_rows(tmp_path: Path) -> None:
    pair = pair_of(tmp_path, DESIGN)
    rows = paired_row_rates(DESIGN)
    assert pair.rows == len(rows) == 12
    assert (pair.rate_baseline, pair.rate_other) == pytest.approx((rows["A"].mean(), rows["B"].mean()), rel=1e-12)
    assert pair.difference == pytest.approx(pair.rate_other - pair.rate_baseline, abs=1e-12)  # type: ignore[operator]
    by_task = rows.groupby("base_task_id").mean()
    for group in pair.by_task:
        assert (group.rate_baseline, group.rate_other) == pytest.approx(tuple(by_task.loc[group.key]), rel=1e-12)
        assert group.difference == pytest.approx(group.rate_other - group.rate_baseline, abs=1e-12)  # type: ignore[operator]


def wilson(successes: float, trials: int) -> tuple[float, float]:
    """The Wilson score interval from its definition."""
    z, p = stats.norm.ppf(0.975), successes / trials
    center = (p + z**2 / (2 * trials)) / (1 + z**2 / trials)
    half = z / (1 + z**2 / trials) * np.sqrt(p * (1 - p) / trials + z**2 / (4 * trials**2))
    return center - half, center + half


def test_rows_that_errored_unevenly_do_not_make_a_difference_of_their_own(tmp_path: Path) -> None:
    """Each row the same in both arms; only which replicates ended in ERROR differs: no difference, equal rates.

    Pooled over evaluations A would be 1/4 and B 3/4: a 50-point difference that no row has.
    """
    pair = pair_of(tmp_path, {"A": {"t/one": "SEEE", "t/zero": "FFFF"}, "B": {"t/one": "SSSS", "t/zero": "FEEE"}})
    assert (pair.rate_baseline, pair.rate_other, pair.difference) == (0.5, 0.5, 0.0)
    assert (pair.interval_baseline.low, pair.interval_baseline.high) == pytest.approx(wilson(1, 2))  # type: ignore[union-attr]
    assert (pair.successes_baseline, pair.evaluations_baseline) == (1, 5)


def test_the_tables_say_what_each_rate_is(tmp_path: Path) -> None:
    text = render_markdown(compare_variants(run_of(tmp_path, DESIGN)), tmp_path)
    assert "baseline rate (mean of rows)" in text and "other rate (mean of rows)" in text
    assert "A rate (mean of rows)" in text and "B rate (mean of rows)" in text
    assert "success rate (of evaluations)" in text


def test_the_analysts_guide_reproduces_a_pairs_rates_in_pandas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/analysts.md's pandas block, run in a project whose runs/ holds the run it names, gives compare's figures."""
    guide = (Path(__file__).parents[2] / "docs" / "analysts.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", guide, flags=re.DOTALL) if "difference = " in b]
    pair = pair_of(tmp_path / "runs", DESIGN)
    monkeypatch.chdir(tmp_path)
    names: dict[str, Any] = {}
    exec(block, names)  # the guide's own example
    assert tuple(names["rates"]) == pytest.approx((pair.rate_baseline, pair.rate_other), rel=1e-12)
    assert names["difference"] == pytest.approx(pair.difference, rel=1e-12)
    assert [tuple(names["by_task"].loc[g.key]) for g in pair.by_task] == [
        pytest.approx((g.rate_baseline, g.rate_other), rel=1e-12) for g in pair.by_task
    ]
