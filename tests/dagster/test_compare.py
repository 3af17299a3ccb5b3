"""`coder-eval compare` over synthetic runs: pairing, ERROR exclusion, flips, breakdowns, formats, errors."""

from __future__ import annotations

import json
import os
import random
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from scipy import stats

from coder_eval_dagster.core.compare.analysis import compare_runs, compare_variants
from coder_eval_dagster.core.compare.rows import read_run_rows

from ..support.helpers import run_cli
from ..support.synthetic_runs import evaluation, evaluation_result, write_run

DAY = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
ROWS = [f"shop/{i:03d}" for i in range(164)]
FAILS_A = {i for i in range(164) if i % 10 == 0}  # 17 rows
FAILS_B = set(range(30))  # the known subset the second variant fails
ERRORS_A, ERRORS_B = {150}, {100, 101}


def status(i: int, fails: set[int], errors: set[int]) -> str:
    return "ERROR" if i in errors else ("FAILURE" if i in fails else "SUCCESS")


@pytest.fixture
def experiment_run(tmp_path: Path) -> Path:
    rows = []
    for i, task_id in enumerate(ROWS):
        tags = ["even" if i % 2 == 0 else "odd"]
        rows.append(evaluation("a", task_id, status(i, FAILS_A, ERRORS_A), tags=tags, cost_usd=0.02))
        rows.append(evaluation("b", task_id, status(i, FAILS_B, ERRORS_B), tags=tags, cost_usd=0.03, turns=3))
    return write_run(tmp_path / "runs", DAY, rows)


def test_every_figure_of_a_164_row_experiment(experiment_run: Path) -> None:
    (pair,) = compare_variants(read_run_rows(experiment_run)).pairs
    paired = [i for i in range(164) if i not in ERRORS_A | ERRORS_B]
    regressed = [i for i in paired if i not in FAILS_A and i in FAILS_B]
    improved = [i for i in paired if i in FAILS_A and i not in FAILS_B]
    assert (pair.baseline, pair.other, pair.rows) == ("a", "b", len(paired)) == ("a", "b", 161)
    assert pair.rate_baseline == pytest.approx(sum(i not in FAILS_A for i in paired) / 161)
    assert pair.rate_other == pytest.approx(sum(i not in FAILS_B for i in paired) / 161)
    assert pair.difference == pytest.approx(pair.rate_other - pair.rate_baseline) and pair.difference < 0
    assert pair.difference_interval.low < pair.difference < pair.difference_interval.high < 0
    assert pair.mcnemar_p == pytest.approx(
        stats.binomtest(len(improved), len(regressed) + len(improved)).pvalue, abs=1e-6
    )
    assert [f.task_id for f in pair.regressions] == [ROWS[i] for i in regressed]
    assert [f.task_id for f in pair.improvements] == [ROWS[i] for i in improved]
    flip = pair.regressions[0]
    assert (flip.score_baseline, flip.score_other) == (1.0, 0.0)
    assert flip.report_other == str(experiment_run / "b" / flip.task_id / "00" / "task.html")
    # ERROR rows are out of the paired denominators, counted and listed apart
    assert pair.error_evaluations == {"a": 1, "b": 2}
    assert [(e.task_id, e.errored_in) for e in pair.error_rows] == [
        (ROWS[100], ["b"]),
        (ROWS[101], ["b"]),
        (ROWS[150], ["a"]),
    ]
    assert pair.evaluations_baseline == pair.evaluations_other == 161
    assert pair.interval_baseline.low < pair.rate_baseline < pair.interval_baseline.high
    cost = next(d for d in pair.deltas if d.metric == "cost_usd")
    assert cost.median_delta == pytest.approx(0.01) and cost.rows == 161
    assert next(d for d in pair.deltas if d.metric == "turns").p90_delta == 2
    assert [g.key for g in pair.by_tag] == ["even", "odd"] and sum(g.rows for g in pair.by_tag) == 161
    (shop,) = pair.by_task
    assert shop.key == "shop" and shop.rows == 161 and shop.regressions == len(regressed)


def test_replicates_are_averaged_and_error_replicates_dropped(tmp_path: Path) -> None:
    rows = [
        evaluation("a", "t1", "SUCCESS", 0),
        evaluation("a", "t1", "SUCCESS", 1),
        evaluation("b", "t1", "FAILURE", 0),
        evaluation("b", "t1", "ERROR", 1),  # left out: t1 under b is FAILURE
        evaluation("a", "t2", "SUCCESS", 0),
        evaluation("a", "t2", "FAILURE", 1),  # half: not a pass for McNemar
        evaluation("b", "t2", "SUCCESS", 0),
        evaluation("b", "t2", "SUCCESS", 1),
    ]
    (pair,) = compare_variants(read_run_rows(write_run(tmp_path, DAY, rows))).pairs
    assert pair.rows == 2 and pair.difference == pytest.approx(((0 - 1) + (1 - 0.5)) / 2)
    assert (pair.successes_baseline, pair.evaluations_baseline) == (3, 4)
    assert (pair.successes_other, pair.evaluations_other) == (2, 3)
    assert [f.task_id for f in pair.regressions] == ["t1"] and [f.task_id for f in pair.improvements] == ["t2"]
    assert pair.error_rows == [] and pair.error_evaluations == {"a": 0, "b": 1}


def test_two_runs_pair_the_same_variants(tmp_path: Path) -> None:
    before = write_run(tmp_path, DAY, [evaluation(v, f"t{i}", "SUCCESS") for v in ("a", "b") for i in range(8)])
    after_rows = [evaluation(v, f"t{i}", "FAILURE" if v == "b" else "SUCCESS") for v in ("a", "b") for i in range(8)]
    after = write_run(tmp_path, DAY.replace(day=2), [*after_rows, evaluation("a", "new", "SUCCESS")])
    comparison = compare_runs(read_run_rows(before), read_run_rows(after))
    a, b = comparison.pairs
    assert (a.baseline, a.other) == (f"a@{before.name}", f"a@{after.name}")
    assert a.difference == 0 and a.unpaired_rows == 1
    assert b.difference == -1 and len(b.regressions) == 8 and b.mcnemar_p == pytest.approx(2 / 256)
    assert [p.other for p in compare_runs(read_run_rows(before), read_run_rows(after), "b").pairs] == [
        f"b@{after.name}"
    ]


def test_a_run_folder_without_its_parquet_is_read_from_task_json(tmp_path: Path) -> None:
    from coder_eval_dagster.core.layout import RESULT_FILE

    run_dir = tmp_path / "2026-12-01T00-00-00Z"
    for variant, status_ in (("base", "SUCCESS"), ("other", "FAILURE")):
        folder = run_dir / variant / "t" / "00"
        folder.mkdir(parents=True)
        (folder / RESULT_FILE).write_text(evaluation_result(variant, "t", status_).model_dump_json())
    (pair,) = compare_variants(read_run_rows(run_dir), "base").pairs
    assert pair.rows == 1 and [f.task_id for f in pair.regressions] == ["t"]


def test_cli_formats(experiment_run: Path, tmp_path: Path) -> None:
    as_json = run_cli("compare", experiment_run, "--format", "json")
    assert as_json.code == 0, as_json.err
    document = json.loads(as_json.out)
    assert document["pairs"][0]["rows"] == 161 and [a["label"] for a in document["arms"]] == ["a", "b"]
    assert document["pairs"][0]["difference_interval"]["high"] < 0
    table = run_cli("compare", experiment_run)
    assert table.code == 0 and "b vs a" in table.out and "McNemar" in table.out
    report = tmp_path / "out" / "report.md"
    report.parent.mkdir()
    assert run_cli("compare", experiment_run, "--baseline", "b", "--format", "md", "-o", report).code == 0
    text = report.read_text()
    assert "## a vs b" in text and f"](../runs/{experiment_run.name}/a/shop/001/00/task.html)" in text
    page = tmp_path / "out" / "page.html"
    written = run_cli("compare", experiment_run, "--format", "html", "-o", page)
    assert written.code == 0 and written.out.strip() == str(page)
    html = page.read_text()
    assert html.count("<svg") == 3 and not re.search(r"<script|<link|src=|url\((?!#)", html)  # nothing fetched
    assert set(re.findall(r'"(https?://[^"]*)"', html)) <= {
        "http://www.w3.org/2000/svg",
        "http://www.w3.org/1999/xlink",
    }
    assert {p.name for p in page.parent.glob("*.png")} == {
        "page.success_rate.png",
        "page.forest_1.png",
        "page.cost_success.png",
    }


def test_cli_errors_are_one_line(experiment_run: Path, tmp_path: Path) -> None:
    wrong = run_cli("compare", experiment_run, "--baseline", "nope")
    assert wrong.code == 2 and wrong.err.strip().count("\n") == 0 and "no variant 'nope'" in wrong.err
    missing = run_cli("compare", tmp_path / "absent")
    assert missing.code == 2 and "no such run folder" in missing.err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no evaluations" in run_cli("compare", empty).err


def test_history_keeps_the_last_days_and_refuses_a_folder_without_tables(tmp_path: Path) -> None:
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    write_run(tmp_path, today - timedelta(days=10), [evaluation("a", "t1", "FAILURE")])
    write_run(tmp_path, today - timedelta(days=1), [evaluation("a", "t1", "SUCCESS"), evaluation("a", "t2", "ERROR")])
    everything = json.loads(run_cli("history", tmp_path, "--format", "json").out)
    assert [r["pass_rate"] for r in everything["pass_rate_per_day"]] == [0.0, 1.0]
    assert everything["flaky_rows"] == [
        {"variant_id": "a", "task_id": "t1", "runs": 2, "runs_with_disagreeing_replicates": 0, "flips_between_runs": 1}
    ]
    recent = json.loads(run_cli("history", tmp_path, "--days", "3", "--format", "json").out)
    assert recent["pass_rate_per_day"] == [
        {
            "run_date": (today - timedelta(days=1)).date().isoformat(),
            "variant_id": "a",
            "evaluations": 2,
            "errors": 1,
            "pass_rate": 1.0,
        }
    ]
    assert run_cli("history", tmp_path, "--days", "0").code == 2  # argparse's usage error
    empty = run_cli("history", tmp_path / "nothing")
    assert empty.code == 2 and "no task_results or criteria_scores table" in empty.err


def test_suite_float_metadata_leaves_error_out() -> None:
    from coder_eval_dagster.core.compare.suite_plots import suite_float_metadata
    from coder_eval_dagster.core.models.results import EvaluationResult

    def result(status: str, score: float, cost: float | None) -> EvaluationResult:
        return evaluation_result("v", "t", status, weighted_score=score, cost_usd=cost)

    figures = suite_float_metadata(
        [result("SUCCESS", 1.0, 0.2), result("FAILURE", 0.5, None), result("ERROR", 0.0, 0.1)]
    )
    assert figures == {"pass_rate": 0.5, "mean_score": 0.75, "cost_per_task": pytest.approx(0.15)}
    assert suite_float_metadata([result("ERROR", 0.0, None)]) == {  # no verdict: a gap in the plot, not a fall
        "pass_rate": None,
        "mean_score": None,
        "cost_per_task": 0.0,
    }


def test_the_regression_verdict_needs_significance_and_a_drop(tmp_path: Path) -> None:
    from coder_eval_dagster.core.compare.regression import regression_verdict, same_task_set

    def night(day: int, failing: int) -> Path:
        return write_run(
            tmp_path,
            DAY.replace(day=day),
            [evaluation("v", f"t{i}", "FAILURE" if i < failing else "SUCCESS") for i in range(10)],
        )

    healthy, five_worse, six_worse = read_run_rows(night(1, 0)), read_run_rows(night(2, 5)), read_run_rows(night(3, 6))
    assert same_task_set(healthy, six_worse)
    assert regression_verdict(healthy, five_worse).passed  # 5 flips one way: p = 1/16, not significant
    verdict = regression_verdict(healthy, six_worse)  # 6 flips: p = 1/32
    assert not verdict.passed and verdict.details["v.regressed_rows"] == "\n".join(f"t{i}" for i in range(6))
    assert regression_verdict(six_worse, healthy).passed  # better is never a regression
    assert regression_verdict(None, healthy).passed


@pytest.mark.parametrize("replicates", [1, 2, 3])
def test_the_verdict_from_plain_outcomes_has_compare_runs_figures(tmp_path: Path, replicates: int) -> None:
    """The nightly verdict skips pandas (issue 25) yet reads compare_runs' difference, McNemar p and flips exactly."""
    from coder_eval_dagster.core.compare.regression import regression_verdict

    rng = random.Random(replicates)
    outcomes = ("SUCCESS", "SUCCESS", "FAILURE", "ERROR")

    def night(day: int) -> Path:
        rows = [
            evaluation(variant, f"b{t % 3}/{t}", rng.choice(outcomes), replicate)
            for variant in ("a", "b")
            for t in range(40)
            for replicate in range(replicates)
        ]
        return write_run(tmp_path, DAY.replace(day=day), rows)

    before, after = read_run_rows(night(1)), read_run_rows(night(2))
    details = regression_verdict(before, after).details
    for pair in compare_runs(before, after).pairs:
        variant = pair.other.split("@")[0]
        assert details[f"{variant}.difference"] == float(pair.difference or 0.0)
        assert details[f"{variant}.mcnemar_p"] == pair.mcnemar_p
        assert details[f"{variant}.regressed_rows"] == ("\n".join(f.task_id for f in pair.regressions) or "none")
        assert details[f"{variant}.improved_rows"] == ("\n".join(f.task_id for f in pair.improvements) or "none")


def test_a_run_known_only_to_the_tables(experiment_run: Path) -> None:
    import shutil

    shutil.rmtree(experiment_run)  # the folder is gone; <runs-dir>/tables still has its rows
    (pair,) = compare_variants(read_run_rows(experiment_run)).pairs
    assert pair.rows == 161 and pair.baseline == "a"


def test_the_runs_index_follows_a_changed_run_json(tmp_path: Path) -> None:
    from coder_eval_dagster.core.compare.index import write_index

    run_dir = write_run(tmp_path, DAY, [evaluation("a", "t1", "FAILURE"), evaluation("b", "t1", "ERROR")])
    assert "a: 0/1 (0%); b: 0/0 (1 ERROR excluded)" in write_index(tmp_path).read_text()
    document = json.loads((run_dir / "run.json").read_text())
    document["task_results"][0] |= {"status": "SUCCESS", "success": True}  # as a rescore would
    (run_dir / "run.json").write_text(json.dumps(document))
    os.utime(run_dir / "run.json", ns=(1, 1))  # a different modification time, whatever the clock's resolution
    assert "a: 1/1 (100%); b: 0/0 (1 ERROR excluded)" in write_index(tmp_path).read_text()


def test_the_runs_index_lists_a_large_runs_failures_and_leaves_the_rest_to_its_viewer(tmp_path: Path) -> None:
    """A 6,000-evaluation run made the index 637 KB, and it holds every run of the runs folder."""
    from coder_eval_dagster.core.compare.index import write_index

    rows = [evaluation("a", f"t{n:03d}", "FAILURE" if n % 10 == 0 else "SUCCESS") for n in range(300)]
    write_run(tmp_path, DAY, rows)
    page = write_index(tmp_path).read_text()
    assert page.count("<li>") == 31 and page.count(" FAILURE</li>") == 30 and "SUCCESS</li>" not in page
    assert "270 more: the run's viewer lists every evaluation" in page
