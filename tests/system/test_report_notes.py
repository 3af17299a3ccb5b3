"""Through the installed CLI: an agent cut off at max_tool_calls passes, and every report says it was cut off
(run.md's Run-time Notes, task.html, the run viewer's row, the JUnit testcase's output); a run-wide budget that
left evaluations unstarted fails the JUnit file as it fails the run, and the viewer's first line says why."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ..support.browser import chromium
from ..support.helpers import criterion
from .conftest import CLI, SystemCli, replay_task_file, task_file

pytestmark = pytest.mark.slow

CUT = "run_limits.max_tool_calls (2) reached: the agent was stopped there"
OVER = "used 2 tool calls, over run_limits.expected_tool_calls 1"
NOT_RUN = "2 evaluations not run: the run-wide budget was spent ($0.0100 of $0.0050)"


def cut_off_task(folder: Path) -> Path:
    """Three tool calls, the third refused by max_tool_calls; the file the criterion wants is written first."""
    calls = [{"tool": "Bash", "command": f"echo {n} > f{n}.txt"} for n in range(3)]
    turns = [{"usage": {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.01}, "calls": calls, "text": "done"}]
    return replay_task_file(
        folder,
        "cut",
        turns,
        run_limits={"max_tool_calls": 2, "expected_tool_calls": 1},
        success_criteria=[criterion("file_exists", path="f0.txt")],
    )


def test_a_cut_off_success_is_noted_everywhere_and_the_budget_fails_the_junit(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    task = cut_off_task(tmp_path / "tasks")
    junit = tmp_path / "ci.xml"
    outcome, run = system_cli.run(
        task, "--repeats", "3", "--max-usd", "0.005", "-j", "1", "--junit", str(junit), env={}
    )
    assert outcome.code == 1, outcome.output
    assert run.result("cut")["final_status"] == "SUCCESS" and run.summary["not_run_count"] == 2
    # what the budget left unstarted is not unfinished: the run is rebuilt and rescored (both said "incomplete")
    assert system_cli("report", run.path, "--rebuild", env={}).code == 0
    assert "incomplete" not in system_cli("rescore", run.path, env={}).err

    notes = (run.path / "run.md").read_text().split("## Run-time Notes\n", 1)[1]
    assert f"> **WARNING:** [cut] [default] #00 {CUT}" in notes and f"#00 {OVER}" in notes
    assert f"<li><strong>WARNING</strong>: {CUT}</li>" in (run.evaluation("cut") / "task.html").read_text()

    root = ET.parse(junit).getroot()
    case = root.find(".//testcase[@name='cut[00]']")
    assert case is not None and case.find("failure") is None
    assert f"WARNING: {CUT}" in (case.findtext("system-out") or "")
    gate = root.find(".//testsuite[@name='suite-gates']/testcase[@name='run-budget']")
    assert gate is not None and gate.findtext("failure") == NOT_RUN and root.get("failures") == "1"

    shown = chromium((run.path / "index.html").as_uri(), "--dump-dom").stdout  # the page as its script drew it
    assert f'<p id="verdict" class="verdict FAILED">FAILED: {NOT_RUN}</p>' in shown
    assert '<option value="~">with notes (1)</option>' in shown and ">\u26a0 2</td>" in shown


def test_a_failing_score_never_reads_as_its_threshold(tmp_path: Path, system_cli: SystemCli) -> None:
    """0.6999999 fails a 0.7 threshold: the terminal, run.md, the JUnit file and task.html show enough places to
    say so (two places would print 0.70 beside the threshold 0.7)."""
    score = {"command": "echo 0.6999999", "score_from_stdout": True, "pass_threshold": 0.7}
    task = task_file(
        tmp_path / "tasks", "near", agent={"type": "none"}, success_criteria=[criterion("run_command", **score)]
    )
    junit = tmp_path / "ci.xml"
    outcome, run = system_cli.run(task, "--junit", str(junit), env={})
    assert outcome.code == 1, outcome.output
    shown = [outcome.out, (run.path / "run.md").read_text(), junit.read_text()]
    for text in [*shown, (run.evaluation("near") / "task.html").read_text()]:
        assert "0.6999999" in text, text
        assert "check\u201d score 0.70" not in text and "score 0.70 <" not in text and "<td>0.700</td>" not in text


def test_a_multi_line_commands_failure_and_an_early_stops_advisory_criteria_read_right(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """The why of a failing multi-line pre_run named only its first line (a line that did not fail); an early
    stop's advisory criteria counted in "criteria passed", so a passing run read 1/2 (task.html: 1/1)."""
    failing = task_file(
        tmp_path / "tasks", "ml_err", agent={"type": "none"}, pre_run=[{"command": "echo first\nexit 4\n"}]
    )
    calls = [{"tool": "Bash", "command": "echo one"}, {"tool": "Bash", "command": "echo three"}]
    armed = criterion("command_executed", command_pattern="echo one", stop_early={"on_pass": "stop"})
    stopped = replay_task_file(
        tmp_path / "tasks",
        "stopped",
        [{"calls": calls, "text": "done"}],
        success_criteria=[armed, criterion("command_executed", command_pattern="echo three")],
    )
    junit = tmp_path / "ci.xml"
    outcome, run = system_cli.run(tmp_path / "tasks", "--junit", str(junit), env={})
    assert outcome.code == 1, outcome.output
    assert "(exit code 4): echo first exit 4" in outcome.out, outcome.out
    md = (run.path / "run.md").read_text()
    assert "echo first exit 4" in md and 'message="pre_run command 1 failed (exit code 4): echo first exit 4' in (
        junit.read_text()
    )
    row = next(line for line in md.splitlines() if line.startswith("|") and "stopped" in line)
    assert run.result("stopped")["final_status"] == "SUCCESS" and "| 1/1 |" in row, row
    assert stopped.exists() and failing.exists()


def test_a_price_file_prices_a_replayed_trajectorys_recorded_cost(tmp_path: Path, system_cli: SystemCli) -> None:
    """A recorded turn's cost_usd is the recording's figure unless the run's price file prices the model."""
    usage = {"input_tokens": 1_000_000, "output_tokens": 0, "cost_usd": 0.004}
    task = replay_task_file(
        tmp_path / "tasks",
        "gateway",
        [{"usage": usage, "text": "done"}],
        agent={"type": "replay", "trajectory": "gateway.traj.yaml", "model": "my-gw-model"},
        success_criteria=[criterion("file_exists", path="nothing.txt")],
    )
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  my-gw-model: {input_per_mtok: 5, output_per_mtok: 5}\n")
    outcome, run = system_cli.run(task, "--prices", str(prices), env={})
    (turn,) = run.result("gateway")["iterations"][0]["turns"]
    assert (turn["cost_usd"], turn["cost_source"]) == (5.0, "priced"), outcome.output
    assert "agent $5.0000 (priced)" in outcome.out, outcome.out


def test_the_log_of_a_verdict_labels_an_informational_criterion(tmp_path: Path, system_cli: SystemCli) -> None:
    """`-v` logged "run_command 0.00; run_command 0.00" for a gating and a weight-0 criterion alike."""
    checks = [
        criterion("run_command", command="exit 1", description="gating"),
        {**criterion("run_command", command="exit 2", description="style"), "weight": 0},
    ]
    task = task_file(tmp_path / "tasks", "informed", agent={"type": "none"}, success_criteria=checks)
    outcome, _ = system_cli.run(task, "-v", env={})
    assert outcome.code == 1, outcome.output
    assert "FAILURE, score 0.000; run_command 0.00; run_command 0.00 (informational)" in outcome.err, outcome.err


def test_a_log_reader_that_goes_away_costs_the_run_neither_its_results_nor_its_exit_code(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """`coder-eval run ... 2>&1 | head -1`: the next progress line raised BrokenPipeError, and the run ended there,
    unfinished (no run.json), with exit 0."""
    rows = "".join(f'{{"id": "r{n}", "want": {n % 2}}}\n' for n in range(4))
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "rows.jsonl").write_text(rows)
    check = criterion("run_command", command="sleep 0.5; test ${row.want} = 1", description="odd rows pass")
    task = task_file(
        tmp_path / "tasks", "piped", agent={"type": "none"}, dataset={"paths": ["rows.jsonl"]}, success_criteria=[check]
    )
    command = [str(CLI), "run", str(task), "--runs-dir", str(system_cli.runs), "-j", "1"]
    with (tmp_path / "out.txt").open("wb") as out:
        process = subprocess.Popen(
            command, cwd=tmp_path, env=system_cli.environment({}), stdout=out, stderr=subprocess.PIPE
        )
        assert process.stderr is not None
        first = process.stderr.readline()
        process.stderr.close()  # the reader is gone after one line
        assert process.wait(timeout=120) == 1, first  # two rows fail: the verdict, not 0
    (run_json,) = system_cli.runs.glob("*T*/run.json")
    assert json.loads(run_json.read_text())["passed"] is False
    assert "FAILED 4 evaluations" in (tmp_path / "out.txt").read_text()
