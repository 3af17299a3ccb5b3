"""Every report file a run leaves carries coder_eval's report schema names (its docs/REPORT_SCHEMA.md, as the
released 0.12.16 writes them: /work/notes/coder-eval-compat.md section 3), with the values its rules give.

The expected names are written out here from the schema, not taken from our models, so a field renamed or
dropped on our side fails this test.
"""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.reports.junit import GATES

from ..support.helpers import run_cli
from ..support.report_project import EVALUATIONS, FAILED, SUCCEEDED, write_project

RUN_SUMMARY = {
    "run_id", "start_time", "end_time", "total_duration_seconds", "tasks_run", "tasks_succeeded", "tasks_failed",
    "tasks_error", "tasks_not_graded", "tasks_measured", "tasks_token_budget_exceeded", "tasks_cost_budget_exceeded",
    "skipped_tasks", "max_parallel", "task_results", "framework_version", "environment_info", "tasks_graded",
    "pass_rate", "error_share", "tasks_cost_incomplete", "cost_complete", "agent_cost_usd", "eval_overhead_cost_usd",
    "total_cost_usd", "row_selection",
}  # fmt: skip
TASK_ROW = {
    "task_id", "replicate_index", "status", "weighted_score", "duration", "iteration_count", "tags", "task_path",
    "iterations", "startup_ms", "generation_ms", "tool_ms", "teardown_ms", "agent_wall_ms", "setup_ms", "grading_ms",
    "model_used", "reference_similarity", "input_tokens", "output_tokens", "cache_creation_input_tokens",
    "cache_read_input_tokens", "total_tokens", "total_cost_usd", "agent_cost_usd", "cost_complete", "judge_cost_usd",
    "simulator_cost_usd", "error_message", "error_category", "expected_commands", "actual_commands",
    "commands_efficiency", "agent_config", "sdk_options", "installed_tools", "max_turns_exhausted",
    "expected_turns_overage", "total_turns", "visible_turns", "expected_turns", "has_final_reply", "stopped_early",
    "early_stop_reason", "turns_remaining_at_stop", "gate_threshold", "variant_id",
}  # fmt: skip
EVALUATION_RESULT = {  # the fields we fill (the schema's others are optional)
    "task_id", "task_description", "variant_id", "agent_type", "model_used", "started_at", "completed_at",
    "duration_seconds", "setup_ms", "grading_ms", "final_status", "max_turns_exhausted", "weighted_score",
    "iteration_count", "success_criteria_results", "iterations", "error_message", "environment_info", "task_config",
    "command_stats", "total_token_usage", "total_assistant_turns", "actual_commands", "pre_run_results",
    "post_run_results", "simulation", "early_stop",
}  # fmt: skip
CRITERION = {
    "result_kind", "criterion_type", "description", "score", "details", "error", "evaluation_status",
    "pass_threshold", "gating",
}  # fmt: skip
COMMAND_STATS = {
    "total_commands", "commands_by_tool", "total_command_time_ms", "avg_command_time_ms", "slowest_commands",
    "successful_commands", "failed_commands", "unknown_commands", "success_rate", "most_common_sequence",
}  # fmt: skip
ITERATION = {
    "iteration", "user_input", "agent_output", "commands", "timestamp", "duration_seconds", "token_usage",
    "model_used", "assistant_turn_count", "num_turns", "max_turns_exhausted", "result_summary",
}  # fmt: skip
COMMAND = {
    "tool_name", "tool_id", "assistant_turn_index", "timestamp", "duration_ms", "parameters", "result_status",
    "result_summary", "sequence_number",
}  # fmt: skip
TOKEN_USAGE = {
    "uncached_input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
    "total_cost_usd", "input_tokens",
}  # fmt: skip
HOOK = {"command", "exit_code", "stdout", "stderr", "duration_seconds", "error"}
TASK_CONFIG = {"resolved", "source_yaml", "source_file", "lineage"}
VARIANT = {
    "variant_id", "tasks_run", "tasks_succeeded", "tasks_failed", "tasks_error", "tasks_not_graded", "average_score",
    "average_duration", "total_tokens", "replicate_count", "tasks_token_budget_exceeded", "tasks_cost_budget_exceeded",
    "tasks_measured", "tasks_graded", "pass_rate",
}  # fmt: skip
EXPERIMENT = {
    "experiment_id", "description", "variant_ids", "task_summaries", "variant_aggregates", "total_duration_seconds",
    "per_replicate_scores",
}  # fmt: skip
TASK_SUMMARY = {"task_id", "variant_results", "best_variant", "is_tie", "score_spread", "replicate_count"}
VARIANT_RESULT = {
    "variant_id", "task_id", "weighted_score", "final_status", "duration_seconds", "total_tokens", "iteration_count",
    "total_assistant_turns", "reference_similarity", "replicate_index", "replicate_count",
}  # fmt: skip
SUITE = {
    "suite_id", "variant_id", "rows_total", "rows_passed", "rows_failed", "rows_error", "rows_not_graded",
    "pass_rate", "average_weighted_score", "criterion_stats", "failed_samples", "criterion_aggregates", "passed",
    "rows_graded",
}  # fmt: skip
FAILED_SAMPLE = {
    "row_id", "task_id", "final_status", "weighted_score", "failure_reasons", "error_message", "task_json_relpath",
    "replicate_index",
}  # fmt: skip
CRITERION_AGGREGATE = {
    "criterion_type", "description", "rows_total", "rows_excluded", "metrics", "threshold_checks", "passed",
    "details", "error",
}  # fmt: skip


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def has(record: dict[str, Any], names: set[str]) -> None:
    assert names <= record.keys(), sorted(names - record.keys())


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run of the report project (24 evaluations), shared by the tests of this module."""
    folder = tmp_path_factory.mktemp("project")
    experiment = write_project(folder)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_HOME", str(folder / "home"))
        done = run_cli(
            "run", "-e", experiment, "--runs-dir", folder / "runs", "-j", "2", "--junit-xml", folder / "j.xml"
        )
    assert done.code == 1, done.err  # the failing tasks
    assert ET.parse(folder / "j.xml").getroot().get("failures") == str(FAILED)
    return (folder / "runs" / "latest").resolve()


def test_run_json_is_a_run_summary(run_dir: Path) -> None:
    summary = read(run_dir / "run.json")
    has(summary, RUN_SUMMARY | {"passed", "suite", "experiment"})
    for row in summary["task_results"]:
        has(row, TASK_ROW)
    counts = [summary[f"tasks_{bucket}"] for bucket in ("run", "succeeded", "failed", "error", "not_graded")]
    assert counts == [EVALUATIONS, SUCCEEDED, FAILED, 0, 0]
    assert summary["pass_rate"] == pytest.approx(SUCCEEDED / EVALUATIONS) and summary["error_share"] == 0.0
    assert summary["max_parallel"] == 2 and summary["passed"] is False and summary["experiment"] == "ab"
    assert summary["row_selection"] == {"split": None, "max_rows": None, "sample_per_stratum": None}
    assert {row["status"] for row in summary["task_results"]} == {"SUCCESS", "FAILURE"}
    assert sorted({row["replicate_index"] for row in summary["task_results"]}) == [0, 1]
    hello = next(row for row in summary["task_results"] if row["task_id"] == "replay_hello")
    tokens = [hello[name] for name in ("input_tokens", "output_tokens", "cache_read_input_tokens", "total_tokens")]
    assert tokens == [2700, 240, 1100, 2700 + 240 + 1100]  # input_tokens: the uncached prompt
    assert (hello["agent_cost_usd"], hello["total_cost_usd"], hello["cost_complete"]) == (0.007, 0.007, True)
    assert (hello["total_turns"], hello["visible_turns"], hello["has_final_reply"]) == (2, 4, True)
    assert summary["agent_cost_usd"] == pytest.approx(0.007 * 4) and summary["eval_overhead_cost_usd"] is None
    agentless = next(row for row in summary["task_results"] if row["task_id"] == "pass")
    assert (agentless["input_tokens"], agentless["iteration_count"], agentless["actual_commands"]) == (None, 1, 0)
    assert [iteration["command_count"] for iteration in agentless["iterations"]] == [0]  # coder_eval's one


def test_task_json_is_an_evaluation_result(run_dir: Path) -> None:
    failing = read(run_dir / "hint/fail/01/task.json")
    has(failing, EVALUATION_RESULT)
    assert (failing["final_status"], failing["task_description"], failing["error_message"]) == (
        "FAILURE",
        "a file that is never made",
        None,
    )
    first, informational = failing["success_criteria_results"]
    has(first, CRITERION)
    assert (first["result_kind"], first["criterion_type"], first["evaluation_status"]) == (
        "basic",
        "file_exists",
        "evaluated",
    )
    assert first["details"] == "path: nowhere.txt; exists: false" and first["evidence"]["exists"] is False
    assert (first["gating"], informational["gating"]) == (True, False)
    assert failing["command_stats"]["total_commands"] == 0 and failing["actual_commands"] == 0  # agentless: zeros
    has(failing["task_config"], TASK_CONFIG)
    assert (
        failing["task_config"]["resolved"]["task_id"] == "fail"
        and "nowhere.txt" in failing["task_config"]["source_yaml"]
    )

    hello = read(run_dir / "base/replay_hello/00/task.json")
    (iteration,) = hello["iterations"]
    has(iteration, ITERATION)
    assert [c["tool_name"] for c in iteration["commands"]] == ["Write", "Bash", "Edit"]
    for command in iteration["commands"]:
        has(command, COMMAND)
    assert iteration["result_summary"]["result"] == "hello.py prints Hello, World!"
    has(hello["total_token_usage"], TOKEN_USAGE)
    assert hello["total_token_usage"]["input_tokens"] == 2700 + 1100  # the whole prompt: uncached + cache read
    has(hello["command_stats"], COMMAND_STATS)
    assert hello["command_stats"]["total_commands"] == 3 and isinstance(hello["command_stats"]["success_rate"], float)
    for hook in read(run_dir / "base/pass/00/task.json")["pre_run_results"]:
        has(hook, HOOK)

    label = read(run_dir / "base/labels/r3/01/task.json")["success_criteria_results"][0]
    assert (label["result_kind"], label["observed_label"], label["expected_label"]) == ("classification", "b", "b")


def test_variant_experiment_and_suite_files(run_dir: Path) -> None:
    for variant in ("base", "hint"):
        aggregate = read(run_dir / variant / "variant.json")
        has(aggregate, VARIANT)
        # replicates folded: 6 tasks, not 12 evaluations; a task is as bad as its worst replicate
        assert (aggregate["tasks_run"], aggregate["tasks_succeeded"], aggregate["tasks_failed"]) == (6, 4, 2)
        assert aggregate["replicate_count"] == 2 and aggregate["pass_rate"] == pytest.approx(4 / 6)

    experiment = read(run_dir / "experiment.json")
    has(experiment, EXPERIMENT)
    assert (experiment["experiment_id"], experiment["variant_ids"]) == ("ab", ["base", "hint"])
    summaries = {summary["task_id"]: summary for summary in experiment["task_summaries"]}
    assert len(summaries) == 6
    for summary in summaries.values():
        has(summary, TASK_SUMMARY)
        for result in summary["variant_results"]:
            has(result, VARIANT_RESULT)
    assert (summaries["pass"]["best_variant"], summaries["pass"]["is_tie"]) == ("hint", True)  # a tie: the larger id
    assert experiment["per_replicate_scores"]["base"]["fail"] == [0.0, 0.0]

    suite = read(run_dir / "base" / "labels" / "suite.json")
    has(suite, SUITE)
    assert (suite["rows_total"], suite["rows_passed"], suite["rows_failed"], suite["passed"]) == (6, 4, 2, True)
    for sample in suite["failed_samples"]:
        has(sample, FAILED_SAMPLE)
    assert [s["task_json_relpath"] for s in suite["failed_samples"]] == [
        "base/labels/r2/00/task.json",
        "base/labels/r2/01/task.json",
    ]
    label, command = suite["criterion_aggregates"]
    for aggregate in (label, command):
        has(aggregate, CRITERION_AGGREGATE)
    assert label["threshold_checks"] == [{"metric": "accuracy", "min_value": 0.5, "actual_value": 1.0, "passed": True}]
    assert label["details"]["confusion"] == [
        {"expected": "a", "observed": "a", "count": 4},
        {"expected": "b", "observed": "b", "count": 2},
    ]
    metrics = command["metrics"]  # every criterion's metrics, over 6 rows of scores 1, 0, 1 (twice)
    assert (metrics["count"], metrics["median"], metrics["completion_rate"]) == (6.0, 1.0, 1.0)
    assert (metrics["mean"], metrics["std"]) == (pytest.approx(2 / 3, abs=1e-6), pytest.approx(0.471405, abs=1e-6))


def test_replicate_folders_from_00_and_the_latest_link(run_dir: Path) -> None:
    assert sorted(p.name for p in (run_dir / "base" / "pass").iterdir()) == ["00", "01"]
    latest = run_dir.parent / "latest"
    assert latest.is_symlink() and os.readlink(latest) == run_dir.name  # relative: the runs folder can move


@pytest.fixture
def copy(run_dir: Path, tmp_path: Path) -> Path:
    """The run folder copied (the verbs below rewrite its files)."""
    return Path(shutil.copytree(run_dir, tmp_path / run_dir.name))


def test_report_rebuild_rewrites_run_json_from_the_task_json_files(copy: Path) -> None:
    before = read(copy / "run.json")
    kept = run_cli("report", copy, "--rebuild")  # the run's window and width come from its run.json
    assert kept.code == 0, kept.err
    assert f"[OK] Aggregated {EVALUATIONS} task(s) ({SUCCEEDED} ok / {FAILED} fail / 0 err)" in kept.out
    after = read(copy / "run.json")
    assert (after["end_time"], after["max_parallel"]) == (before["end_time"], 2)
    assert after["task_results"] == before["task_results"]

    (copy / "run.json").unlink()
    (copy / "experiment.json").unlink()
    assert run_cli("report", copy, "--rebuild").code == 0  # from the task.json files alone
    rebuilt = read(copy / "run.json")
    assert rebuilt["task_results"] == before["task_results"] and rebuilt["pass_rate"] == before["pass_rate"]
    assert read(copy / "experiment.json")["experiment_id"] == "ab"


def test_report_renders_md_junit_and_html(copy: Path, tmp_path: Path) -> None:
    markdown = run_cli("report", copy)
    assert markdown.code == 0 and markdown.out.startswith(f"# Run {copy.name}\n")
    assert "| hint | [fail](hint/fail/01/task.html) | 01 | FAILURE |" in markdown.out
    assert run_cli("report", copy, "-o", tmp_path / "out.md").code == 0
    assert (tmp_path / "out.md").read_text() == markdown.out

    junit = run_cli("report", copy, "-f", "junit")
    assert junit.code == 0 and junit.out.strip() == f"[OK] JUnit report written to {copy / 'junit.xml'}"
    root = ET.parse(copy / "junit.xml").getroot()
    gates = [
        (case.get("name"), case.find("failure")) for case in root.iter("testcase") if case.get("classname") == GATES
    ]
    assert gates == [("base/labels", None), ("hint/labels", None)]  # the suite's accuracy threshold, met in both
    counts = (root.get("tests"), root.get("failures"), root.get("errors"))
    assert counts == (str(EVALUATIONS + len(gates)), str(FAILED), "0")
    names = {case.get("name"): case.get("classname") for case in root.iter("testcase")}
    assert (
        names["labels/r2[01]"] == "labels" and names["replay_hello[00]"] == "task"
    )  # the task file's stem (tasks/replay_hello/task.yaml)

    (copy / "base/pass/00/task.html").unlink()
    html = run_cli("report", copy, "-f", "html")
    assert html.code == 0 and f"Rendered {EVALUATIONS} task.html" in html.out
    assert "<!DOCTYPE html>" in (copy / "base/pass/00/task.html").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rebuild", "-f", "md"], "--rebuild rewrites the run's files: it takes no -f or -o"),
        (["-f", "html", "-o", "x.html"], "-f html -o FILE writes the report of a run of one evaluation; "),
    ],
)
def test_report_usage_errors_are_one_line(copy: Path, args: list[str], message: str) -> None:
    done = run_cli("report", copy, *args)
    assert done.code == 2 and message in done.err and len(done.err.strip().splitlines()) == 1


def test_a_malformed_record_is_named_by_file_and_field(copy: Path, tmp_path: Path) -> None:
    broken = copy / "base/pass/00/task.json"
    record = read(broken)
    record["final_status"] = "PASSED"
    broken.write_text(json.dumps(record))
    done = run_cli("report", copy, "-f", "html")
    assert done.code == 2 and "Traceback" not in done.err
    assert f"{broken}: final_status: Input should be 'SUCCESS', 'FAILURE'" in done.err
    assert (
        run_cli("report", tmp_path / "nowhere").err.strip()
        == f"coder-eval report: {tmp_path / 'nowhere'}: no such run folder"
    )


def test_evaluate_refuses_what_it_cannot_grade(run_dir: Path, tmp_path: Path) -> None:
    tasks = run_dir.parent.parent / "tasks"
    rows = run_cli("evaluate", tasks / "labels.yaml", tmp_path, "--run-dir", tmp_path / "ev")
    assert (
        rows.code == 2 and "evaluate grades one task without a dataset; this file resolves to 3 row-task(s)" in rows.err
    )
    missing = run_cli("evaluate", tasks / "pass.yaml", tmp_path / "absent", "--run-dir", tmp_path / "ev")
    assert missing.code == 2 and "not a directory to grade" in missing.err


def test_two_means_apart_only_by_their_last_bit_are_a_tie() -> None:
    """0.88 as the mean of two replicates and of three (0.88 and 0.8799999999999999) is one score: experiment.md
    named a best variant between them."""
    from coder_eval_dagster.core.models.report import TaskSummary, VariantResult

    def scored(variant: str, score: float) -> VariantResult:
        return VariantResult(
            variant_id=variant, task_id="t", weighted_score=score, final_status="SUCCESS", duration_seconds=1.0
        )

    last_bit = TaskSummary(
        task_id="t", variant_results=[scored("base", (0.9 + 0.86) / 2), scored("hint", (0.7 + 1.0 + 0.94) / 3)]
    )
    assert last_bit.variant_results[0].weighted_score != last_bit.variant_results[1].weighted_score
    assert (last_bit.is_tie, last_bit.best_variant) == (True, "hint")  # the larger id, as coder_eval breaks a tie
    apart = TaskSummary(task_id="t", variant_results=[scored("base", 0.9), scored("hint", 0.88)])
    assert (apart.is_tie, apart.best_variant) == (False, "base")
