"""`coder-eval compare` on a run with replicates that disagree: pass@k, pass^k, flaky rows, clustered intervals.

The installed console script in a process of its own, on a run folder
written straight into the Parquet tables (tests/support/synthetic_runs.py).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ..support.synthetic_runs import evaluation, write_run
from .conftest import SystemCli

# Replicate outcomes (S: SUCCESS, F: FAILED, E: ERROR) per variant and row-task; "shop" has four rows.
OUTCOMES = {
    "a": {"shop/0": "SSF", "shop/1": "FFF", "shop/2": "SSS", "shop/3": "SFE", "solo": "FSF"},
    "b": {"shop/0": "SSS", "shop/1": "SFS", "shop/2": "SSS", "shop/3": "SSS", "solo": "SSF"},
}
STATUS = {"S": "SUCCESS", "F": "FAILED", "E": "ERROR"}

# By hand, per row (c of n non-ERROR replicates), then averaged over the rows with n >= k:
# a: 2/3, 0/3, 3/3, 1/2, 1/3.  pass@2 = (1 + 0 + 1 + 1 + 2/3) / 5; pass@3 leaves shop/3 (n = 2) out.
PASS_AT_K = {"a": {1: 2.5 / 5, 2: 11 / 15, 3: 3 / 4}, "b": {1: 13 / 15, 2: 1.0, 3: 1.0}}
PASS_HAT_K = {"a": {1: 2.5 / 5, 2: 4 / 15, 3: 1 / 4}, "b": {1: 13 / 15, 2: 11 / 15, 3: 3 / 5}}


@pytest.fixture
def run_with_replicates(tmp_path: Path) -> Path:
    rows = [
        evaluation(variant, task_id, STATUS[outcome], replicate)
        for variant, tasks in OUTCOMES.items()
        for task_id, outcomes in tasks.items()
        for replicate, outcome in enumerate(outcomes, start=1)
    ]
    return write_run(tmp_path / "runs", datetime(2026, 12, 1, 2, 0, tzinfo=UTC), rows)


def test_compare_json_has_pass_k_flaky_rows_and_clustered_intervals(
    system_cli: SystemCli, run_with_replicates: Path
) -> None:
    outcome = system_cli("compare", run_with_replicates, "--format", "json", env={})
    assert outcome.code == 0, outcome.output
    document = json.loads(outcome.out)
    for arm in document["arms"]:
        figures = {f["k"]: f for f in arm["pass_k"]}
        assert {k: f["pass_at_k"] for k, f in figures.items()} == pytest.approx(PASS_AT_K[arm["label"]])
        assert {k: f["pass_hat_k"] for k, f in figures.items()} == pytest.approx(PASS_HAT_K[arm["label"]])
        assert figures[3]["rows"] == (4 if arm["label"] == "a" else 5)
        assert figures[3]["rows_left_out"] == (1 if arm["label"] == "a" else 0)
        assert arm["max_replicates"] == 3 and arm["success_clustered"]["clusters"] == 2
        shop = next(task for task in arm["pass_k_by_task"] if task["base_task_id"] == "shop")
        assert shop["pass_k"][0]["pass_at_k_interval"] is not None  # four rows: a bootstrap interval
    assert [(r["variant_id"], r["task_id"], r["passes"], r["replicates"]) for r in document["flaky_rows"]] == [
        ("a", "shop/0", 2, 3),
        ("a", "shop/3", 1, 2),
        ("a", "solo", 1, 3),
        ("b", "shop/1", 2, 3),
        ("b", "solo", 2, 3),
    ]
    (pair,) = document["pairs"]
    # per-row differences 1/3, 2/3, 0, 1/2 (shop) and 1/3 (solo): mean 11/30; cluster residual sums +-1/30
    clustered = pair["difference_clustered"]
    assert clustered["mean"] == pytest.approx(11 / 30) and (clustered["observations"], clustered["clusters"]) == (5, 2)
    assert clustered["se_clustered"] == pytest.approx(math.sqrt(2 / 1 * 2 * (1 / 30) ** 2) / 5)
    assert clustered["se"] == pytest.approx(math.sqrt(11 / 900))
    assert pair["verdict"]["uses"] == "clustered"  # shop holds four rows
    assert pair["verdict"]["interval"] == clustered["interval_clustered"]
    assert pair["sequential"] is None  # no batches recorded


def test_compare_markdown_shows_the_same(system_cli: SystemCli, run_with_replicates: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    outcome = system_cli("compare", run_with_replicates, "--format", "md", "-o", report, env={})
    assert outcome.code == 0, outcome.output
    text = report.read_text(encoding="utf-8")
    assert "## Repeated trials" in text and "| arm | k | rows | rows with fewer replicates | pass@k |" in text
    assert "| a | 2 | 5 | 0 | 73.3% |" in text and "| b | 3 | 5 | 0 | 100.0% |" in text
    assert "| a | 3 | 4 | 1 | 75.0% |" in text  # shop/3 has two non-ERROR replicates
    assert "**Flaky rows: replicates that disagree (5)**" in text and "| a | shop/3 | 1 | 2 |" in text
    assert "clustered 95 % CI" in text and "Clustered by base task (2 base tasks, 5 rows)" in text
    assert "from the clustered interval (some base task has more than one row)" in text


def test_an_arm_whose_rows_all_errored_says_no_row_is_paired(system_cli: SystemCli, tmp_path: Path) -> None:
    """A variant whose every row was an ERROR pairs no row with the baseline: the verdict said "every paired row
    having the same difference" of the rows it did not have."""
    rows = [evaluation("a", f"t{n}", "SUCCESS", 1) for n in range(3)]
    rows += [evaluation("b", f"t{n}", "ERROR", 1) for n in range(3)]
    run = write_run(tmp_path / "runs", datetime(2026, 12, 1, 3, 0, tzinfo=UTC), rows)
    outcome = system_cli("compare", run, "--format", "md", env={})
    assert outcome.code == 0, outcome.output
    assert "no row is paired (each variant's rows ERROR or missing in the other)." in outcome.out
    assert "every paired row having the same difference" not in outcome.out
