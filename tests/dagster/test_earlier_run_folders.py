"""A run folder written before the report schema (tests/data/earlier_run) stays readable: by the readers,
`compare`, `history`, `report`, the runs index, `rescore` and `run --resume`; its `FAILED` reads as `FAILURE`."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from coder_eval_dagster.core.compare.rows import read_run_rows
from coder_eval_dagster.core.layout import load_result, load_summary

from ..support.helpers import run_cli

FIXTURE = Path(__file__).parent.parent / "data" / "earlier_run"
RUN_ID = "2026-12-04T21-08-15Z"


@pytest.fixture
def earlier(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the earlier run folder, in its project (its plan names ``tasks`` relative to it)."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project)
    (
        project / "results" / RUN_ID / "default/failing/01/sandbox"
    ).mkdir()  # empty, so git keeps none: as the run left it
    monkeypatch.chdir(project)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    return project / "results" / RUN_ID


def test_its_files_read_as_the_schema_names_them(earlier: Path) -> None:
    failing = load_result(earlier / "default/failing/01/task.json")
    assert (failing.final_status, failing.replicate, failing.description) == ("FAILURE", 1, "a file that is never made")
    assert [c.type for c in failing.criteria] == ["file_exists", "run_command"]
    assert failing.criteria[0].details == {"path": "nowhere.txt", "exists": False}
    assert json.loads(failing.model_dump_json())["success_criteria_results"][0]["details"] == (
        "path: nowhere.txt; exists: false"
    )
    hello = load_result(earlier / "default/replay_hello/01/task.json")
    usage = hello.total_token_usage
    assert usage is not None and (usage.uncached_input_tokens, usage.output_tokens, usage.total_cost_usd) == (
        2700,
        240,
        0.007,
    )
    assert [call.tool for turn in hello.trajectory for call in turn.calls] == ["Write", "Bash", "Edit"]
    assert hello.command_stats.total_commands == 3 and hello.iteration_count == 1
    dialog = load_result(earlier / "default/replay_dialog/01/task.json")
    assert dialog.simulation is not None and (dialog.simulation.stop_reason, dialog.simulation.turns) == (
        "criteria_passed",
        2,
    )

    report = load_summary(earlier)
    assert (report.tasks_run, report.tasks_succeeded, report.tasks_failed, report.pass_rate) == (4, 3, 1, 0.75)
    assert {(row.task_id, row.replicate_index, row.status) for row in report.task_results} >= {
        ("failing", 1, "FAILURE")
    }
    assert (report.start_time, report.passed) == ("2026-12-04T21:08:15.570Z", False)


def test_compare_history_report_and_the_index_read_it(earlier: Path) -> None:
    from_tables = read_run_rows(earlier).evaluations
    assert sorted(set(from_tables["final_status"])) == ["FAILURE", "SUCCESS"]  # FAILED, as written then
    assert from_tables.set_index("task_id")["report"]["failing"] == "default/failing/01/task.html"
    history = run_cli("history", earlier.parent, "--format", "json")
    assert history.code == 0 and json.loads(history.out)["pass_rate_per_day"][0]["pass_rate"] == 0.75
    shutil.rmtree(earlier.parent / "tables" / "task_results")
    from_files = read_run_rows(earlier).evaluations
    assert (
        from_files.set_index("task_id")["final_status"].to_dict()
        == from_tables.set_index("task_id")["final_status"].to_dict()
    )
    assert run_cli("history", earlier.parent).code == 2  # no task_results table left: said in one line

    junit = run_cli("report", earlier, "-f", "junit")
    assert junit.code == 0, junit.err
    cases = {case.get("name"): case for case in ET.parse(earlier / "junit.xml").getroot().iter("testcase")}
    assert cases["failing[01]"].find("failure").get("message") == "FAILURE"
    markdown = run_cli("report", earlier)
    assert markdown.code == 0 and "| default | [failing](default/failing/01/task.html) | 01 | FAILURE |" in markdown.out
    assert run_cli("report", earlier, "-f", "html").code == 0

    from coder_eval_dagster.core.compare.index import write_index

    index = write_index(earlier.parent).read_text()
    assert "default: 3/4 (75%)" in index and "default/failing/01/task.html" in index


def test_rescore_and_resume_keep_its_numbering_and_write_the_schema(earlier: Path) -> None:
    rescored = run_cli("rescore", earlier)
    assert rescored.code == 1, rescored.err  # failing still fails
    document = json.loads((earlier / "run.json").read_text())
    assert {row["task_id"]: (row["replicate_index"], row["status"]) for row in document["task_results"]} == {
        "failing": (1, "FAILURE"),
        "passing": (1, "SUCCESS"),
        "replay_dialog": (1, "SUCCESS"),
        "replay_hello": (1, "SUCCESS"),
    }
    assert json.loads((earlier / "default/failing/01/task.json").read_text())["final_status"] == "FAILURE"

    for name in ("task.json", "run_state.json"):  # as if the run had been cut short there
        (earlier / "default/passing/01" / name).unlink()
    resumed = run_cli("run", "--resume", earlier)
    assert resumed.code == 1, resumed.err
    assert load_result(earlier / "default/passing/01/task.json").final_status == "SUCCESS"
    assert not (earlier / "default/passing/00").exists()  # the run's own numbering, from 01
    report = load_summary(earlier)
    assert (report.tasks_run, report.tasks_failed) == (4, 1)
    rows = pd.read_parquet(earlier.parent / "tables" / "task_results")
    assert sorted(rows["final_status"]) == ["FAILURE", "SUCCESS", "SUCCESS", "SUCCESS"]  # rewritten: one vocabulary
