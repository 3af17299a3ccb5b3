"""The files the released coder_eval writes (tests/data/upstream_run) read into our models, what they leave out
derived as coder_eval derives it, and what we write of them reads back the same."""

from __future__ import annotations

import json
from pathlib import Path

from coder_eval_dagster.core.layout import evaluation_files, load_result, load_summary, read_record, run_results
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


# A run of its claude-code agent and an llm_judge, against a scripted Messages API (the fixture's README): its agent
# also wrote a task.json of its own, preserved in the evaluation's artifacts/.
AGENT_RUN = RUN.parent / "2026-12-05_19-53-04"
MADE = AGENT_RUN / "default/made/00/task.json"


def test_its_agent_s_tool_calls_are_the_turns_they_were_made_in() -> None:
    result = load_result(MADE)
    assert [(turn.index, turn.text, turn.input_tokens) for turn in result.trajectory] == [
        (1, None, 100),
        (2, None, 140),
        (3, "done", 160),
    ]
    calls = [(c.turn, c.seq, c.tool, c.parameters, c.status) for turn in result.trajectory for c in turn.calls]
    assert calls == [
        (1, 1, "Bash", {"command": 'echo hi > out.txt; echo \'{"made_by": "the agent"}\' > task.json'}, "success"),
        (2, 1, "Read", {"file_path": "out.txt"}, "success"),
    ]
    assert result.trajectory[1].calls[0].output == "1\thi\n2\t"
    assert (result.actual_commands, result.command_stats.commands_by_tool) == (2, {"Bash": 1, "Read": 1})
    again = EvaluationResult.model_validate_json(result.model_dump_json())  # what we write of it reads back
    assert again.trajectory == result.trajectory


def test_its_judge_s_usage_is_counted_in_the_evaluation_s_spend() -> None:
    theirs = json.loads((AGENT_RUN / "run.json").read_text())["task_results"][0]
    result = load_result(MADE)
    judge = result.criteria[1]
    assert (judge.type, judge.result_kind, judge.details_text) == (
        "llm_judge",
        "judge",
        "score=1.000\nrationale: out.txt says hi",
    )
    assert judge.token_usage is not None
    assert (judge.token_usage.uncached_input_tokens, judge.token_usage.output_tokens) == (100, 20)
    assert (result.judge_cost_usd, result.total_cost_usd) == (theirs["judge_cost_usd"], theirs["total_cost_usd"])
    row = TaskRow.of(result)
    assert (row.judge_cost_usd, row.judge_input_tokens, row.judge_output_tokens) == (0.0002, 100, 20)
    again = EvaluationResult.model_validate_json(result.model_dump_json())
    assert again.criteria == result.criteria and again.judge_cost_usd == 0.0002


def test_its_run_json_rows_take_what_they_leave_out_from_its_task_json_files() -> None:
    rows = {(row.task_id, row.replicate_index): row for row in load_summary(RUN).task_results}
    assert [(c.type, c.passed, c.gating) for c in rows[("hello", 1)].criteria] == [
        ("file_exists", True, True),
        ("file_contains", False, False),
    ]
    assert [(c.index, c.passed) for c in rows[("sums/r1", 0)].criteria] == [(0, True)]
    assert (rows[("sums/r1", 0)].base_task_id, rows[("sums/r1", 0)].row_id) == ("sums", "r1")
    (made,) = load_summary(AGENT_RUN).task_results
    assert [c.type for c in made.criteria] == ["file_exists", "llm_judge"]
    assert made.judge_token_usage is not None and made.judge_token_usage.total_cost_usd == 0.0002
    assert made.judge_cost_usd == 0.0002 and made.actual_commands == 2  # its own, as it wrote them


def test_load_result_places_its_task_json_in_its_folders() -> None:
    result = load_result(RUN / "default/sums/r1/01/task.json")
    assert (result.run_id, result.task_id, result.replicate) == (RUN.name, "sums/r1", 1)
    assert (load_result(RUN / "default/hello/01/task.json").replicate, load_result(MADE).run_id) == (1, AGENT_RUN.name)


def test_its_artifacts_are_not_walked_for_results() -> None:
    assert (AGENT_RUN / "default/made/00/artifacts/made/task.json").is_file()  # the agent's own file
    assert evaluation_files(AGENT_RUN, "task.json") == [MADE]
    assert list(run_results(AGENT_RUN)) == [MADE]
