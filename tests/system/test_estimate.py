"""Issue 24's forecast through the installed CLI: `coder-eval run ... --estimate` before a run, against its actual spend.

A replayed suite whose turns report their cost (three tasks, two variants,
one replaying twice the turns of the other) with an `llm_judge` on
the scripted Messages API runs once; `--estimate` on the same selection then
forecasts, from that history, what the next run spends; the next run's
run.json says what it did spend. A task with no history is flagged and
bounded by its limits. No estimate runs anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from ..support.fake_anthropic import Script
from ..support.helpers import criterion, run_folders, write, write_task
from .conftest import SystemCli, anthropic_environment, new_key, replay_task_file

pytestmark = pytest.mark.slow

COSTS = {"small": 0.02, "medium": 0.05, "large": 0.11}  # USD a turn of each task reports
VARIANTS = ("cheap", "dear")
TOLERANCE = 0.2  # the forecast is within 20% of the actual


def agent_turn(cost: float) -> dict[str, Any]:
    return {
        "usage": {"input_tokens": 1200, "output_tokens": 300, "cost_usd": cost},
        "calls": [{"tool": "Write", "path": "a.txt", "content": "done\n"}],
        "text": "wrote a.txt",
    }


def replayed_task(folder: Path, task_id: str, cost: float, **changes: Any) -> Path:
    """A task in its folder, with the trajectory of either variant beside it (dear replays each turn twice)."""
    write(folder / "cheap.traj.yaml", yaml.safe_dump({"turns": [agent_turn(cost)]}))
    write(folder / "dear.traj.yaml", yaml.safe_dump({"turns": [agent_turn(cost), agent_turn(cost)]}))
    data = {
        "task_id": task_id,
        "description": "a replayed agent whose turns report their cost",
        "agent": {"type": "replay", "trajectory": "cheap.traj.yaml"},
        "sandbox": {"python": None},
        "success_criteria": [criterion("file_exists", path="a.txt")],
        **changes,
    }
    return write_task(folder, data)


def priced_suite(folder: Path) -> tuple[Path, Path]:
    """Three tasks (a file check and an llm_judge each) and the experiment of the two variants."""
    judged = [criterion("file_exists", path="a.txt"), criterion("llm_judge", prompt="1.0 if a.txt says done")]
    for task_id, cost in COSTS.items():
        replayed_task(folder / "tasks" / task_id, task_id, cost, success_criteria=judged)
    variants = [{"variant_id": "cheap"}, {"variant_id": "dear", "agent": {"trajectory": "dear.traj.yaml"}}]
    experiment = write(folder / "spend.yaml", yaml.safe_dump({"experiment_id": "spend", "variants": variants}))
    return folder / "tasks", experiment


def close(forecast: float, actual: float) -> bool:
    return actual > 0 and abs(forecast - actual) <= TOLERANCE * actual


def table_lines(text: str) -> dict[str, list[str]]:
    """The forecast table's lines by their first cell (a variant, or total)."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    return {cells[0]: cells for cells in lines if cells[0] in (*VARIANTS, "total")}


def dollars(cell: str) -> float:
    assert cell.startswith("$"), cell  # not a floor (≥) nor unbounded
    return float(cell.removeprefix("$").replace(",", ""))


def test_the_forecast_from_history_is_within_20_percent_of_the_next_runs_spend(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    fake = scripted_anthropic(Script([], verdict={"score": 1.0, "rationale": "says done"}))
    env = anthropic_environment(fake.url, new_key())
    tasks, experiment = priced_suite(tmp_path)
    selection = (tasks, "-e", experiment, "--runs-dir", system_cli.runs)
    first, _ = system_cli.run(tasks, "-e", str(experiment), env=env)
    assert first.code == 0, first.output

    table = system_cli("run", *selection, "--estimate", "-j", "2", env={})  # no key: nothing calls a model
    as_json = system_cli("run", *selection, "--estimate", "--format", "json", "-j", "2", env={})

    assert (table.code, as_json.code) == (0, 0), table.output + as_json.output
    assert len(run_folders(system_cli.runs)) == 1  # nothing was run
    forecast = json.loads(as_json.out)
    assert forecast["history_runs"] == 1 and forecast["concurrency"] == 2
    assert {row["basis"] for row in forecast["rows"]} == {"history"} and len(forecast["rows"]) == 6
    second = system_cli("run", *selection, env=env)
    assert second.code == 0, second.output
    actual = json.loads((run_folders(system_cli.runs)[-1] / "run.json").read_text(encoding="utf-8"))

    lines = table_lines(table.out)
    for variant in VARIANTS:
        spend, predicted = actual["spend_by_variant"][variant], forecast["variants"][variant]
        agent, judges = spend["agent"]["total_cost_usd"], spend["judges"]["total_cost_usd"]
        assert judges > 0 and predicted["evaluations"] == 3 and predicted["evaluations_without_history"] == 0
        assert close(predicted["usd"], spend["total_cost_usd"]), (variant, predicted, spend)
        assert close(predicted["expected"]["agent_usd"], agent) and close(predicted["expected"]["judges_usd"], judges)
        cells = lines[variant]
        assert close(dollars(cells[4]), spend["total_cost_usd"]), (table.out, spend)
        assert close(dollars(cells[6]), agent) and close(dollars(cells[7]), judges), table.out
    assert close(forecast["total"]["usd"], actual["spend"]["total_cost_usd"]), (forecast["total"], actual["spend"])
    assert close(dollars(lines["total"][4]), actual["spend"]["total_cost_usd"]), table.out
    # the dear variant replays twice the turns: the forecast tells the variants apart
    assert forecast["variants"]["dear"]["expected"]["agent_usd"] == pytest.approx(
        2 * forecast["variants"]["cheap"]["expected"]["agent_usd"]
    )

    # a task that never ran: flagged, and bounded by its limits (its agent by max_usd; no judge, no simulated user)
    fresh = replayed_task(tmp_path / "new", "fresh", 0.01, run_limits={"max_usd": 0.5, "task_timeout": 60})
    with_fresh = (tasks, fresh, "-e", experiment, "--runs-dir", system_cli.runs, "--estimate")
    table = system_cli("run", *with_fresh, env={})
    as_json = system_cli("run", *with_fresh, "--format", "json", env={})

    assert (table.code, as_json.code) == (0, 0), table.output + as_json.output
    assert len(run_folders(system_cli.runs)) == 2  # still only the two runs
    forecast = json.loads(as_json.out)
    flagged = [row for row in forecast["rows"] if row["basis"] == "limits"]
    assert [(row["variant_id"], row["task_id"]) for row in flagged] == [("cheap", "fresh"), ("dear", "fresh")]
    assert all(row["history"] == 0 and row["bound"]["agent_usd"] == 0.5 for row in flagged), flagged
    assert all(row["bound"]["judges_usd"] == 0 and row["bound"]["duration_s"] == 60 for row in flagged), flagged
    assert all(any("max_usd 0.5" in note for note in row["notes"]) for row in flagged), flagged
    for variant in VARIANTS:
        totals = forecast["variants"][variant]
        assert (totals["evaluations"], totals["evaluations_without_history"]) == (4, 1)
        assert totals["usd"] == pytest.approx(totals["median"]["usd"] + 0.5)
    assert "without history (2 row-task(s))" in table.out
    assert "cheap fresh: ≤ $0.5000 (agent: max_usd 0.5" in table.out, table.out
    assert table_lines(table.out)["total"][2] == "2"  # the total's evaluations without history


def test_estimate_refuses_what_it_cannot_forecast(tmp_path: Path, system_cli: SystemCli) -> None:
    task = replay_task_file(
        tmp_path,
        "t",
        [agent_turn(0.01)],
        success_criteria=[criterion("file_exists", path="a.txt")],
    )

    without = system_cli("run", task, "--format", "json", "--runs-dir", system_cli.runs, env={})
    resumed = system_cli("run", "--resume", tmp_path / "runs" / "x", "--estimate", env={})

    assert without.code == 2 and "add --estimate" in without.err, without.output
    assert resumed.code == 2 and "--estimate forecasts a new run" in resumed.err, resumed.output
    assert not system_cli.runs.exists()


def test_a_run_whose_forecast_exceeds_its_budget_says_so_at_start(tmp_path: Path, system_cli: SystemCli) -> None:
    task = replayed_task(tmp_path / "tasks", "t", 0.01, run_limits={"max_usd": 0.5})
    runs = ("--repeats", "3", "-j", "1", "--runs-dir", system_cli.runs)

    # no history: each of the three evaluations counts at its max_usd
    bounded = system_cli("run", task, *runs, "--max-usd", "1.0", env={})
    assert (
        "warning: the forecast of this run is $1.5000 (p90 $1.5000; 3 evaluation(s) counted at their limits), over its budget of $1"
        in bounded.err
    ), bounded.output
    assert bounded.code == 0, bounded.output  # a warning, not a stop: the run spent $0.03
    # from history: $0.01 each
    within = system_cli("run", task, *runs, "--max-usd", "0.5", env={})
    assert within.code == 0 and "forecast" not in within.err, within.output
    over = system_cli("run", task, *runs, "--max-usd", "0.02", env={})
    assert "warning: the forecast of this run is $0.0300 (p90 $0.0300), over its budget of $0.02" in over.err, (
        over.output
    )
    # a budget under a cent is said as given, the forecast to the hundredth of a cent (both read "$0.00" before)
    tiny = system_cli("run", task, *runs, "--max-usd", "0.001", env={})
    assert "forecast of this run is $0.0300 (p90 $0.0300), over its budget of $0.001:" in tiny.err, tiny.output
    assert over.code == 1 and "budget spent" in over.out, over.output  # the budget itself stops the third evaluation


def test_a_judge_nobody_priced_makes_the_evaluations_cost_a_floor_everywhere(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """An llm_judge on a model without a price: its tokens have no cost, so the evaluation's is a floor in task.json's
    row, the table and the forecast from that history (cost_complete looked at the agent's tokens only)."""
    fake = scripted_anthropic(Script([], verdict={"score": 1.0, "rationale": "ok"}))
    judges = [
        criterion("file_exists", path="a.txt"),
        criterion("llm_judge", prompt="1.0 if a.txt says done", model="claude-made-up-9"),
    ]
    task = replayed_task(tmp_path / "tasks", "t", 0.01, success_criteria=judges)
    env = anthropic_environment(fake.url, new_key())
    outcome, run = system_cli.run(task, env=env)
    assert outcome.code == 0, outcome.output

    (row,) = run.summary["task_results"]
    assert row["cost_complete"] is False and run.summary["tasks_cost_incomplete"] == 1
    table = pd.read_parquet(system_cli.runs / "tables" / "task_results")
    assert table["cost_complete"].tolist() == [False]
    forecast = system_cli("run", task, "--estimate", "--runs-dir", system_cli.runs, env=env)
    assert forecast.code == 0, forecast.output
    total = table_lines(forecast.out)["total"]
    assert (total[4], total[6], total[7]) == ("≥$0.0100", "$0.0100", "≥$0.0000"), forecast.out  # judges: unknown
