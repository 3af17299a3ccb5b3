"""Run folders the released coder_eval wrote, read by our verbs; ours, re-graded by it.

A team comes with its coder_eval runs (tests/data/upstream_run: agentless, two
replicates, a dataset task whose suite gate fails while every evaluation
passes): `report` in every format, `report --rebuild` (no run plan: from its
task.json files) and `compare` with a run of ours read them, deriving what
coder_eval's files leave out as coder_eval derives it. The other way, the
release's `evaluate <row folder>` finds the sandbox we kept (task.json's
``sandbox_path``), and what it writes back into our folder stays readable.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from . import test_coder_eval_oracle as release
from .conftest import SystemCli, only_run, task_file

ROOT = Path(__file__).parent.parent.parent
FIXTURE = ROOT / "tests" / "data" / "upstream_run"
RUN = "2026-12-05_18-06-47"
EVALUATIONS = [("hello", 0), ("hello", 1), ("sums/r1", 0), ("sums/r1", 1)]
oracle = release.oracle  # the released coder-eval, installed by its script (a skip without Python 3.13)


@pytest.fixture
def upstream(system_cli: SystemCli) -> Path:
    """A copy of the coder_eval project (tasks/) and its run, in the CLI's folder."""
    shutil.copytree(FIXTURE, system_cli.folder / "project")
    return system_cli.folder / "project" / "results" / RUN


def results_of(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(run_dir.glob("default/**/task.json"))]


def test_report_renders_its_run_with_the_verdict_of_its_exit_code(system_cli: SystemCli, upstream: Path) -> None:
    shown = system_cli("report", upstream, env={})
    assert shown.code == 0, shown.output
    assert "**FAILED**" in shown.out  # every evaluation passed; its suite gate did not, so coder_eval exited 1
    assert "4 evaluations: 4 succeeded, 0 failed, 0 errors" in shown.out
    assert "count 2 >= 5: NOT met" in shown.out

    junit = system_cli("report", upstream, "-f", "junit", env={})
    assert junit.code == 0, junit.output
    root = ET.parse(upstream / "junit.xml").getroot()
    assert (root.get("tests"), root.get("failures")) == ("5", "1")
    assert root.find("testsuite[@name='suite-gates']/testcase[@name='default/sums']/failure") is not None

    html = system_cli("report", upstream, "-f", "html", env={})
    assert html.code == 0, html.output
    assert "Rendered 4 task.html file(s)" in html.out
    viewer = (upstream / "index.html").read_text()
    assert all(f"default/{task}/{replicate:02d}/task.html" in viewer for task, replicate in EVALUATIONS)
    assert 'class="verdict FAILED"' in viewer and "count 2 &lt; 5" in viewer  # its suite gate, as the md says
    # its details are text: kept as written
    assert "Includes: 0/1 found; Score: 0.00" in (upstream / "default/hello/00/task.html").read_text()

    refused = system_cli("rescore", upstream, env={})  # no plan of ours to score it again under: said, and how
    assert refused.code == 2 and "a run coder_eval wrote?" in refused.err, refused.output
    assert "coder-eval evaluate TASK SANDBOX" in refused.err


def test_rebuild_takes_its_task_json_files_and_keeps_its_window_and_suite_files(
    system_cli: SystemCli, upstream: Path
) -> None:
    theirs = json.loads((upstream / "run.json").read_text())
    suite = (upstream / "default/sums/suite.json").read_bytes()
    kept = system_cli("report", upstream, "--rebuild", env={})
    assert kept.code == 0, kept.output
    assert "Aggregated 4 task(s) (4 ok / 0 fail / 0 err)" in kept.out
    summary = json.loads((upstream / "run.json").read_text())
    assert (summary["start_time"], summary["end_time"]) == (theirs["start_time"], theirs["end_time"])
    assert summary["skipped_tasks"] == theirs["skipped_tasks"] and summary["max_parallel"] == 2
    assert summary["passed"] is False and summary["suite"][0]["thresholds"][0]["passed"] is False
    assert (upstream / "default/sums/suite.json").read_bytes() == suite  # its gates: not recomputable from task.json

    rows = {(row["task_id"], row["replicate_index"]): row for row in summary["task_results"]}
    assert sorted(rows) == EVALUATIONS  # the replicates from their folders
    assert (rows[("sums/r1", 1)]["base_task_id"], rows[("sums/r1", 1)]["row_id"]) == ("sums", "r1")
    assert rows[("hello", 0)]["tags"] == ["smoke", "lifecycle:generate"]
    criteria = [
        (c["index"], c["passed"], c["gating"], c["weight"], c["details"]) for c in rows[("hello", 0)]["criteria"]
    ]
    assert criteria == [
        (0, True, True, 1.0, "File 'out.txt' exists"),
        (1, False, False, 0.0, "Includes: 0/1 found; Score: 0.00"),
    ]


@pytest.mark.parametrize("verb", [["report", "{run}", "--rebuild"], ["aggregate", "{run}", "-o", "{run}"]])
def test_rebuild_without_its_run_json_spans_its_evaluations(
    system_cli: SystemCli, upstream: Path, verb: list[str]
) -> None:
    """``aggregate RUN -o RUN``: coder_eval's verb after 0.12.16 for the same rebuild."""
    (upstream / "run.json").unlink()
    rebuilt = system_cli(*[word.format(run=upstream) for word in verb], env={})
    assert rebuilt.code == 0, rebuilt.output
    summary = json.loads((upstream / "run.json").read_text())
    results = results_of(upstream)
    window = (min(r["started_at"] for r in results), max(r["completed_at"] for r in results))
    assert (summary["start_time"], summary["end_time"]) == window
    assert summary["total_duration_seconds"] < 5  # the run took 3 s: not until the rebuild
    assert (summary["tasks_run"], summary["passed"]) == (4, False)
    shown = system_cli("report", upstream, env={})  # what we wrote reads back
    assert shown.code == 0 and "**FAILED**" in shown.out, shown.output


def test_aggregate_into_another_folder_is_refused_in_one_line(system_cli: SystemCli, upstream: Path) -> None:
    before = (upstream / "run.json").read_bytes()
    refused = system_cli("aggregate", upstream, "-o", upstream.parent, env={})
    assert refused.code == 2 and refused.err.startswith("coder-eval aggregate: run.json is written into"), refused.err
    assert (upstream / "run.json").read_bytes() == before and "Traceback" not in refused.err
    runs = system_cli("aggregate", upstream.parent, env={})  # report --rebuild's checks: a runs folder is no run
    assert runs.code == 2 and "not one run" in runs.err and not (upstream.parent / "run.json").exists(), runs.err


def test_compare_its_last_run_with_our_first(system_cli: SystemCli, upstream: Path) -> None:
    project = upstream.parent.parent
    ours = system_cli("run", project / "tasks", "--repeats", "2", "--runs-dir", system_cli.runs, env={})
    assert ours.code == 1, ours.output  # the same suite gate, not met here either
    compared = system_cli("compare", upstream, only_run(system_cli.runs).path, "--format", "json", env={})
    assert compared.code == 0, compared.output
    (pair,) = json.loads(compared.out)["pairs"]
    assert (pair["baseline"], pair["rows"], pair["evaluations_baseline"], pair["evaluations_other"]) == (
        f"default@{RUN}",
        2,
        4,
        4,
    )
    assert (pair["rate_baseline"], pair["rate_other"], pair["unpaired_rows"]) == (1.0, 1.0, 0)


def test_rebuild_of_ours_without_run_json_ends_with_its_last_evaluation(system_cli: SystemCli) -> None:
    outcome, run = system_cli.run(task_file(system_cli.folder / "tasks", "made", agent={"type": "none"}), env={})
    assert outcome.code == 0, outcome.output
    (run.path / "run.json").unlink()
    rebuilt = system_cli("report", run.path, "--rebuild", env={})
    assert rebuilt.code == 0, rebuilt.output
    assert run.summary["end_time"] == run.result("made")["completed_at"]  # not the rebuild's time


def test_the_release_regrades_the_sandbox_we_kept_and_we_read_what_it_wrote(
    oracle: Path, system_cli: SystemCli
) -> None:
    task = task_file(system_cli.folder / "tasks", "made", agent={"type": "none"})
    outcome = system_cli("run", task, "--runs-dir", "runs", env={})  # a relative runs folder, as coder_eval's
    assert outcome.code == 0, outcome.output
    run = only_run(system_cli.runs)
    row = Path("runs") / run.path.name / "default" / "made" / "00"
    assert run.result("made")["sandbox_path"] == str(row / "sandbox")  # as the run named it

    env = release.oracle_environment(system_cli)
    graded = subprocess.run(
        [str(oracle), "evaluate", str(row), "--allow-recorded-commands", "--run-dir", "grading"],
        cwd=system_cli.folder,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert f"Artifacts: {row / 'sandbox'}" in graded.stdout and "SUCCESS → SUCCESS" in graded.stdout
    assert "base_task_id" not in run.result("made") and "passed" not in run.summary  # written in its form now

    for verb in (("report",), ("report", "-f", "html"), ("report", "--rebuild"), ("compare",)):
        done = system_cli(*verb[:1], run.path, *verb[1:], env={})
        assert done.code == 0, (verb, done.output)
    assert run.summary["passed"] is True and run.summary["tasks_succeeded"] == 1


AGENT_RUN = "2026-12-05_19-53-04"  # its claude-code agent and an llm_judge against a scripted API (the README)


def test_report_shows_its_agent_s_calls_and_counts_its_judge_s_cost(system_cli: SystemCli, upstream: Path) -> None:
    run = upstream.parent / AGENT_RUN
    theirs = json.loads((run / "run.json").read_text())["task_results"][0]
    html = system_cli("report", run, "-f", "html", env={})
    assert html.code == 0, html.output
    assert "Rendered 1 task.html file(s)" in html.out  # not the task.json its agent wrote in the artifacts/
    page = (run / "default/made/00/task.html").read_text()
    assert "3 turn(s)" in page and "<code>Bash</code>" in page and "<code>Read</code>" in page, page
    assert "judges $0.0002" in page

    shown = system_cli("report", run, env={})  # from its run.json
    assert shown.code == 0, shown.output
    assert "| 00 | SUCCESS | 1.000 | 2/2 |" in shown.out and "| $0.0002 (reported) |" in shown.out

    rebuilt = system_cli("report", run, "--rebuild", env={})  # from its task.json, as its own --rebuild counts
    assert rebuilt.code == 0, rebuilt.output
    (row,) = json.loads((run / "run.json").read_text())["task_results"]
    for name in ("judge_cost_usd", "agent_cost_usd", "total_cost_usd", "actual_commands"):
        assert row[name] == pytest.approx(theirs[name]), name


def test_report_counts_the_criteria_of_its_run_json_rows_from_its_task_json(
    system_cli: SystemCli, upstream: Path
) -> None:
    shown = system_cli("report", upstream, env={})
    assert shown.code == 0, shown.output
    assert "| [hello](default/hello/01/task.html) | 01 | SUCCESS | 1.000 | 1/1 |" in shown.out  # its gating one
    assert "| [sums/r1](default/sums/r1/00/task.html) | 00 | SUCCESS | 1.000 | 1/1 |" in shown.out
    assert "0/0" not in shown.out


def test_rescore_keeps_the_run_and_replicate_of_a_task_json_the_release_wrote(
    oracle: Path, system_cli: SystemCli
) -> None:
    task = task_file(system_cli.folder / "tasks", "made", agent={"type": "none"})
    outcome = system_cli("run", task, "--repeats", "2", "--runs-dir", "runs", env={})
    assert outcome.code == 0, outcome.output
    run = only_run(system_cli.runs)
    row = Path("runs") / run.path.name / "default" / "made" / "01"
    graded = release.run_oracle(
        oracle, system_cli, "evaluate", row, "--allow-recorded-commands", "--run-dir", "grading"
    )
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert {"run_id", "replicate_index"}.isdisjoint(run.result("made", replicate="01"))  # its form: in its folders

    rescored = system_cli("rescore", run.path, env={})
    assert rescored.code == 0, rescored.output
    result = run.result("made", replicate="01")
    assert (result["run_id"], result["replicate_index"]) == (run.path.name, 1)
    assert sorted((r["task_id"], r["replicate_index"]) for r in run.summary["task_results"]) == [
        ("made", 0),
        ("made", 1),
    ]


def test_a_dialog_that_ran_out_of_agent_turns_in_its_run_reads(system_cli: SystemCli, upstream: Path) -> None:
    """coder_eval 0.12.16 ends a dialog whose exchange spent run_limits.max_turns with `agent_max_turns`: a
    task.json holding it was refused as malformed, and its evaluation was missing from the rebuilt run."""
    written = upstream / "default/hello/00/task.json"
    result = json.loads(written.read_text())
    result["simulation"] = {
        "n_trials": 1,
        "replicate_index": 0,
        "stop_reason": "agent_max_turns",
        "total_turns": 2,
        "simulator_input_tokens": 10,
        "simulator_output_tokens": 5,
        "simulator_failures": 0,
        "simulator_model": "claude-sonnet-4-6",
    }
    written.write_text(json.dumps(result))
    rebuilt = system_cli("report", upstream, "--rebuild", env={})
    assert rebuilt.code == 0 and "Aggregated 4 task(s)" in rebuilt.out, rebuilt.output
