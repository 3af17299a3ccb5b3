"""A run-wide budget through the installed CLI (issue 24): once the run's reported spend reaches --max-usd, no new
evaluation starts; the rest are recorded as not run, the run fails, and a resume does not spend past it."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
import yaml

from ..support.helpers import criterion, write
from .conftest import SystemCli, replay_task_file

pytestmark = pytest.mark.slow

ROWS = 6


def costly_replay(folder):
    """Six row-tasks whose replayed agent reports $0.50 each (a typed trajectory field from the row)."""
    turns = [
        {"usage": {"input_tokens": 10, "output_tokens": 5, "cost_usd": "${row.cost}"}, "calls": [], "text": "done"}
    ]
    return replay_task_file(
        folder,
        "paid",
        turns,
        dataset={"rows": [{"id": f"r{n}", "cost": 0.5} for n in range(ROWS)]},
        success_criteria=[criterion("run_command", command="true")],
    )


def test_max_usd_stops_new_evaluations_and_a_resume_keeps_the_budget(tmp_path, system_cli: SystemCli) -> None:
    task = costly_replay(tmp_path / "tasks")
    outcome, run = system_cli.run(task, "--max-usd", "1.2", "-j", "1", env={})

    # $0.50, $1.00, then $1.50 >= $1.20: the fourth evaluation does not start
    assert outcome.code == 1, outcome.output
    summary = run.summary
    assert len(summary["task_results"]) == 3 and summary["not_run_count"] == ROWS - 3
    assert {entry["reason"] for entry in summary["not_run"]} == {"budget"}
    assert summary["budget"] == {"max_usd": 1.2, "spent_usd": 1.5, "exhausted": True}
    assert not summary["passed"]
    assert "budget spent: $1.5000 of $1.2000; 3 evaluations not run" in outcome.out
    # the progress lines never count an evaluation that did not start as done: they say it was not run, and why
    for stage in ("sandboxes ready", "agents done", "scored"):
        assert re.search(rf"^{stage}: 3/{ROWS} \(\d+ s\); 3 not run: budget spent$", outcome.err, re.M), outcome.err
    assert f"{ROWS}/{ROWS}" not in outcome.err
    said = (run.path / "run.md").read_text()
    assert "Budget spent: $1.5000 of $1.2000: 3 evaluations not run" in said  # why it failed
    # the runs index shows the spend per variant, the agent apart from the judges and the simulated user
    index = (system_cli.runs / "index.html").read_text()
    assert "default: $1.5000 (agent $1.5000 (reported), judges –, simulated user –)" in index
    # the tables hold what ran, nothing of what did not
    (table,) = (system_cli.runs / "tables/task_results").glob(f"*/{run.path.name}.parquet")
    assert len(pd.read_parquet(table)) == 3
    assert not any((run.path / "default" / entry["task_id"]).exists() for entry in summary["not_run"])

    resumed = system_cli("run", "--resume", run.path, env={})
    assert resumed.code == 1, resumed.output
    assert run.summary["budget"]["spent_usd"] == 1.5 and run.summary["not_run_count"] == ROWS - 3

    # a rescore dropped the evaluations never started, and the run it failed for them passed
    rescored = system_cli("rescore", run.path, env={})
    assert rescored.code == 1, rescored.output
    assert (run.summary["not_run_count"], run.summary["passed"]) == (ROWS - 3, False)


def test_a_budget_spent_by_the_last_evaluation_leaves_a_passing_run_that_run_md_does_not_call_failed(
    tmp_path, system_cli: SystemCli
) -> None:
    outcome, run = system_cli.run(costly_replay(tmp_path / "tasks"), "--max-usd", "2.9", "-j", "1", env={})
    assert outcome.code == 0, outcome.output  # $3.00 >= $2.90 only once every evaluation had started
    assert run.summary["passed"] and run.summary["budget"]["exhausted"] and run.summary["not_run"] == []
    said = (run.path / "run.md").read_text()
    assert "Budget spent: $3.0000 of $2.9000: 0 evaluations not run (every evaluation had started)." in said
    assert "the run fails" not in said


def test_an_experiment_budget_applies_and_the_option_wins(tmp_path, system_cli: SystemCli) -> None:
    task = costly_replay(tmp_path / "tasks")
    exp = write(
        tmp_path / "exp.yaml",
        yaml.safe_dump({"experiment_id": "b", "budget": {"max_usd": 0.9}, "variants": [{"variant_id": "v"}]}),
    )
    _, run = system_cli.run(task, "-e", str(exp), "-j", "1", env={})
    assert (run.summary["budget"]["max_usd"], len(run.summary["task_results"])) == (0.9, 2)

    wider = tmp_path / "wider"
    outcome = system_cli("run", task, "-e", exp, "-j", "1", "--max-usd", "100", "--runs-dir", wider, env={})
    summary = json.loads((wider / "latest/run.json").read_text())
    assert outcome.code == 0 and summary["not_run"] == [] and len(summary["task_results"]) == ROWS, outcome.output
