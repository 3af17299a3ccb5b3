"""What a run records of the statistics, and what its loop asks: run.json's blocks, the flaky gate, run.md's lines.

The sequential A/B is played as the run loop will play it (a seeded batch
plan, ``sequential_status`` after each batch, stop once decisive), and its
decision is checked against ``coder-eval compare``'s view of the same run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from coder_eval_dagster.core.compare.analysis import compare_variants
from coder_eval_dagster.core.compare.rows import read_run_rows
from coder_eval_dagster.core.compare.run_statistics import (
    PairDecision,
    SequentialStatus,
    flaky_share,
    paired_differences,
    replicate_summary,
    row_replicates,
    run_md_lines,
    sequential_block,
    sequential_status,
)
from coder_eval_dagster.core.compare.sequential import plan_batches, sequential_decision
from coder_eval_dagster.core.models.results import EvaluationResult

from ..support.paired_outcomes import add_batches, paired_successes
from ..support.synthetic_runs import evaluation, evaluation_result, write_run

DAY = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)


def results_of(outcomes: dict[tuple[str, str], str]) -> list[EvaluationResult]:
    """EvaluationResults from replicate outcomes per (variant, row-task): S SUCCESS, F FAILURE, E ERROR."""
    status = {"S": "SUCCESS", "F": "FAILURE", "E": "ERROR"}
    return [
        evaluation_result(variant, task, status[outcome], replicate=index)
        for (variant, task), replicates in outcomes.items()
        for index, outcome in enumerate(replicates)
    ]


# ----------------------------------------------------------------------------- the flaky gate


def test_the_flaky_share_counts_only_rows_that_could_disagree() -> None:
    results = results_of(
        {
            ("a", "t1"): "SSF",  # flaky
            ("a", "t2"): "SSS",
            ("a", "t3"): "SEE",  # one non-ERROR replicate: cannot disagree, not counted
            ("b", "t1"): "FS",  # flaky
            ("b", "t2"): "FF",
        }
    )
    assert [(r.variant_id, r.task_id, r.passes, r.replicates) for r in row_replicates(results)] == [
        ("a", "t1", 2, 3),
        ("a", "t2", 3, 3),
        ("a", "t3", 1, 1),
        ("b", "t1", 1, 2),
        ("b", "t2", 0, 2),
    ]
    assert flaky_share(results) == pytest.approx(2 / 4)
    assert flaky_share(results_of({("a", "t1"): "S", ("a", "t2"): "F"})) is None  # repeats: 1


# ----------------------------------------------------------------------------- the sequential A/B in a run loop


@dataclass
class PlayedRun:
    results: list[EvaluationResult]
    batch_of: dict[str, int]
    status: SequentialStatus
    rows_run: int
    stopped_at_batch: int | None


def play_run(rates: dict[str, float], rows: int, batch_rows: int, seed: int, repeats: int = 1) -> PlayedRun:
    """A run loop over ``rows`` row-tasks: batches in the plan's order, every variant of a row together, stop if decisive."""
    rng = np.random.default_rng(seed)
    task_ids = [f"set/{i:03d}" for i in range(rows)]
    plan = plan_batches(task_ids, seed=seed, batch_rows=batch_rows, min_rows=batch_rows)
    batch_of = {task: number for number, batch in enumerate(plan.batches, start=1) for task in batch}
    variants = list(rates)
    baseline_rate, other_rate = rates[variants[0]], rates[variants[1]]
    results: list[EvaluationResult] = []
    rows_run = 0
    for number, batch in enumerate(plan.batches, start=1):
        a, b = paired_successes(rng, (1, len(batch), repeats), baseline_rate, other_rate)
        outcomes = {variants[0]: a[0], variants[1]: b[0]}
        outcomes |= {v: (rng.random((len(batch), repeats)) < rates[v]).astype(float) for v in variants[2:]}
        for variant, successes in outcomes.items():
            for task, replicates in zip(batch, successes, strict=True):
                results += [
                    evaluation_result(variant, task, "SUCCESS" if s else "FAILURE", replicate=r)
                    for r, s in enumerate(replicates)
                ]
        rows_run += len(batch)
        status = sequential_status(results, batch_of, variants, through_batch=number)
        if status.decisive:
            return PlayedRun(results, batch_of, status, rows_run, number if number < len(plan.batches) else None)
    return PlayedRun(results, batch_of, status, rows_run, None)


def test_a_clearly_better_variant_stops_the_loop_early_with_other_better() -> None:
    for seed in range(10):
        run = play_run({"baseline": 0.3, "hint": 0.8}, rows=200, batch_rows=20, seed=seed)
        (comparison,) = run.status.comparisons
        assert comparison.result.decision == "other_better" and run.status.decisive
        assert run.stopped_at_batch is not None and run.rows_run <= 120  # of 200
        assert comparison.result.interval.low > 0


def test_an_a_over_a_experiment_runs_to_the_end_without_a_decision() -> None:
    for seed in range(10):
        run = play_run({"baseline": 0.5, "same": 0.5}, rows=200, batch_rows=20, seed=seed)
        assert run.stopped_at_batch is None and run.rows_run == 200 and not run.status.decisive
        (comparison,) = run.status.comparisons
        assert comparison.result.decision == "undecided" and comparison.result.rows == 200


def test_with_three_variants_the_loop_stops_only_when_both_comparisons_are_decisive() -> None:
    run = play_run({"baseline": 0.3, "hint": 0.9, "same": 0.3}, rows=200, batch_rows=20, seed=3)
    decisions = {c.other: c.result.decision for c in run.status.comparisons}
    assert decisions == {"hint": "other_better", "same": "undecided"} and run.stopped_at_batch is None
    assert sequential_status(run.results, run.batch_of, ["baseline", "hint"], through_batch=10).decisive


def test_the_loop_reads_only_finished_batches_and_every_row_needs_a_batch() -> None:
    results = results_of({("a", "t1"): "F", ("b", "t1"): "S", ("a", "t2"): "F", ("b", "t2"): "S"})
    rows = row_replicates(results)
    differences, batches = paired_differences(rows, {"t1": 1, "t2": 2}, "a", "b", through_batch=1)
    assert differences.tolist() == [1.0] and batches.tolist() == [1]  # t2's batch is still running
    with pytest.raises(ValueError, match="rows without a batch number: t2"):
        paired_differences(rows, {"t1": 1}, "a", "b", through_batch=2)
    with pytest.raises(ValueError, match="baseline and at least one other"):
        sequential_status(results, {"t1": 1, "t2": 1}, ["a"], through_batch=1)


def test_replicates_average_and_error_rows_drop_out_of_the_pairs() -> None:
    results = results_of(
        {
            ("a", "t1"): "SFF",  # 1/3
            ("b", "t1"): "SSE",  # 2/2 (the ERROR replicate left out)
            ("a", "t2"): "EEE",  # no non-ERROR replicate: t2 unpaired
            ("b", "t2"): "SSS",
            ("a", "t3"): "SS",
            ("b", "t3"): "FF",
        }
    )
    differences, batches = paired_differences(row_replicates(results), {"t1": 2, "t2": 1, "t3": 1}, "a", "b", 2)
    assert differences == pytest.approx([-1.0, 2 / 3]) and batches.tolist() == [1, 2]  # batch order: t3, then t1


def test_compare_reads_the_same_sequence_the_run_loop_decided_on(tmp_path: Path) -> None:
    run = play_run({"baseline": 0.35, "hint": 0.75}, rows=200, batch_rows=20, seed=11, repeats=2)
    rows = [evaluation(r.variant_id, r.task_id, r.final_status, replicate=r.replicate) for r in run.results]
    folder = write_run(tmp_path, DAY, rows)
    add_batches(tmp_path, run.batch_of)
    block = sequential_block(run.status, run.rows_run, 200, run.stopped_at_batch)
    (folder / "run.json").write_text(
        json.dumps(json.loads((folder / "run.json").read_text(encoding="utf-8")) | {"sequential": block}),
        encoding="utf-8",
    )
    (pair,) = compare_variants(read_run_rows(folder)).pairs
    assert pair.sequential is not None and pair.sequential.result == run.status.comparisons[0].result
    assert pair.sequential.alpha == block["alpha"] and pair.sequential.margin is None


# ----------------------------------------------------------------------------- run.json and run.md


def test_the_sequential_block_has_the_issues_fields_and_every_comparison() -> None:
    run = play_run({"baseline": 0.2, "hint": 0.9, "worse": 0.0}, rows=200, batch_rows=20, seed=5)
    block = sequential_block(run.status, run.rows_run, 200, run.stopped_at_batch)
    hint, worse = run.status.comparisons
    assert block["decision"] == hint.result.decision == "other_better"
    assert block["interval"] == {"low": hint.result.interval.low, "high": hint.result.interval.high}
    assert (block["rows_run"], block["rows_total"], block["alpha"], block["margin"]) == (run.rows_run, 200, 0.05, None)
    assert block["stopped_at_batch"] == run.stopped_at_batch
    assert [(c["other"], c["decision"]) for c in block["comparisons"]] == [
        ("hint", "other_better"),
        ("worse", "baseline_better"),
    ]
    assert block["comparisons"][1]["decided_at_batch"] == worse.result.decided_at_batch
    assert json.loads(json.dumps(block)) == block  # plain JSON


def test_run_md_shows_pass_k_flaky_rows_and_the_sequential_decision() -> None:
    results = results_of({("a", "t1"): "SSF", ("a", "t2"): "SSS", ("b", "t1"): "FFF", ("b", "t2"): "SFF"})
    differences = np.array([1.0, 0.0, 1.0, 1.0])
    result = sequential_decision(differences, [1, 1, 2, 2], margin=0.1)
    status = SequentialStatus(0.05, 0.1, 2, [PairDecision("a", "b", result)])
    document = replicate_summary(results) | {"sequential": sequential_block(status, 4, 10, 2)}
    text = "\n".join(run_md_lines(document))
    # a: rows 2/3 and 3/3; pass@2 = (1 + 1) / 2, pass^2 = (1/3 + 1) / 2
    assert "| a | 1 | 83.3% | 83.3% |" in text and "| a | 2 | 100.0% | 66.7% |" in text
    assert "| b | 2 | 33.3% | 0.0% |" in text and "| b | 3 | 50.0% | 0.0% |" in text  # b: rows 0/3 and 1/3
    assert "Flaky rows (replicates that disagree): 2" in text and "- t2 [b]: 1 of 3 passed" in text
    assert "4 of 10 rows run (alpha 0.05, equivalence margin 10.0 pp); no new row started after batch 2." in text
    low, high = result.interval.low * 100, result.interval.high * 100
    assert f"- b vs a: {result.decision}" in text and f"[{low:+.1f}, {high:+.1f}] pp over 4 paired rows" in text
    assert run_md_lines(replicate_summary(results_of({("a", "t1"): "S", ("a", "t2"): "F"}))) == []
