"""The files the released coder_eval writes (tests/data/upstream_run) read into our models, what they leave out
derived as coder_eval derives it, and what we write of them reads back the same."""

from __future__ import annotations

import json
from pathlib import Path

from coder_eval_dagster.core.layout import load_result, load_summary, read_record
from coder_eval_dagster.core.models.report import RunSummary, SuiteRollup, TaskRow
from coder_eval_dagster.core.models.results import EvaluationResult

RUN = Path(__file__).parent.parent / "data" / "upstream_run" / "results" / "2026-12-05_18-06-47"


def test_its_task_json_reads_with_the_run_and_replicate_of_its_folders() -> None:
    path = RUN / "default/sums/r1/01/task.json"
    result = load_result(path).located(RUN, path)
    assert (result.run_id, result.task_id, result.base_task_id, result.row_id, result.replicate) == (
        RUN.name,
        "sums/r1",
        "sums",
        "r1",
        1,
    )
    assert (result.success, result.weighted_score, result.sandbox_path) == (
        True,
        1.0,
        "runs/2026-12-05_18-06-47/default/sums/r1/01/artifacts/sums/r1",
    )
    assert set(result.stage_durations) == {"setup", "score"}
    (criterion,) = result.criteria
    assert (criterion.index, criterion.passed, criterion.weight, criterion.pass_threshold) == (0, True, 1.0, 0.9)


def test_its_criteria_are_judged_by_their_thresholds_and_keep_their_text() -> None:
    result = load_result(RUN / "default/hello/00/task.json")
    assert [(c.type, c.passed, c.gating, c.weight, c.details_text) for c in result.criteria] == [
        ("file_exists", True, True, 1.0, "File 'out.txt' exists"),
        ("file_contains", False, False, 0.0, "Includes: 0/1 found; Score: 0.00"),
    ]
    again = EvaluationResult.model_validate_json(result.model_dump_json())
    assert [c.details_text for c in again.criteria] == [c.details_text for c in result.criteria]
    row = TaskRow.model_validate_json(TaskRow.of(result).model_dump_json())
    assert [c.details_text for c in row.criteria] == [c.details_text for c in result.criteria]


def test_its_run_json_has_the_verdict_its_exit_code_gave() -> None:
    summary = load_summary(RUN)
    theirs = json.loads((RUN / "run.json").read_text())
    assert summary.passed is True  # every row a SUCCESS: the rows alone pass it
    assert (summary.variants, summary.total_duration_seconds) == (
        ["default"],
        round(theirs["total_duration_seconds"], 3),
    )
    assert all(row.success for row in summary.task_results)
    gates = read_record(RUN / "default/sums/suite.json", SuiteRollup).gates()
    judged = summary.judged_with(gates)
    assert judged.passed is False  # its suite gate was not met: coder_eval exited 1
    assert [(t["metric"], t["minimum"], t["value"]) for t in judged.suite[0]["thresholds"]] == [("count", 5.0, 2.0)]
    assert RunSummary.model_validate_json(judged.model_dump_json()).passed is False
