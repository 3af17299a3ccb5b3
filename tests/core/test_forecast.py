"""The cost forecast (core/forecast): medians and p90 of the history per row-task, and the bound from limits without.

History is written straight into the task_results table (core/tables.py) as
a run would leave it; the selection is resolved from task files as the CLI
resolves it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from coder_eval_dagster.core.forecast import budget_warning, forecast
from coder_eval_dagster.core.forecast.bounds import judge_prompt_chars
from coder_eval_dagster.core.forecast.history import HISTORY_DEPTH
from coder_eval_dagster.core.models.prices import ModelPrice
from coder_eval_dagster.core.pricing import PriceBook
from coder_eval_dagster.core.resolution import Resolution, resolve
from coder_eval_dagster.core.run_spec import RunSpec
from coder_eval_dagster.core.tables import write_table

from ..support.helpers import criterion, write, write_task

START = datetime(2026, 11, 1, tzinfo=UTC)
# USD per million tokens: a token costs at most 10e-6 (output), a prompt token 1e-6
PRICES = {
    "claude-sonnet-4-5": ModelPrice(input_per_mtok=1, output_per_mtok=10),
    "claude-sonnet-4-6": ModelPrice(input_per_mtok=1, output_per_mtok=10),
}
SONNET_4_5_WINDOW = 200_000  # genai-prices' context window of claude-sonnet-4-5


def replay_task(folder: Path, task_id: str, **changes: Any) -> Path:
    write(folder / f"{task_id}.traj.yaml", yaml.safe_dump({"turns": [{"text": "done"}]}))
    data = {
        "task_id": task_id,
        "description": task_id,
        "agent": {"type": "replay", "trajectory": f"{task_id}.traj.yaml"},
        "sandbox": {"python": None},
        "success_criteria": [criterion("file_exists", path="a.txt")],
        **changes,
    }
    return write_task(folder, data, f"{task_id}.yaml")


def claude_code_task(folder: Path, task_id: str, **changes: Any) -> Path:
    data = {
        "task_id": task_id,
        "description": task_id,
        "initial_prompt": "do it",
        "agent": {"type": "claude-code", "model": "claude-sonnet-4-5"},
        "success_criteria": [criterion("file_exists", path="a.txt")],
        **changes,
    }
    return write_task(folder, data, f"{task_id}.yaml")


def selection(*paths: Path, **spec: Any) -> Resolution:
    resolution = resolve(RunSpec(task_paths=[str(p) for p in paths], **spec))
    assert not resolution.problems, resolution.problems
    return resolution


def earlier_run(runs: Path, index: int, rows: list[dict[str, Any]]) -> None:
    """Run number ``index`` (a day apart from the others) with these task_results rows."""
    run_ts = START + timedelta(days=index)
    run_id = f"run-{index:02d}"
    common = {"run_id": run_id, "run_ts": run_ts, "replicate": 0, "final_status": "SUCCESS"}
    filled = [{"base_task_id": row["task_id"].split("/")[0], **common, **row} for row in rows]
    write_table(runs / "tables", "task_results", run_id, run_ts, filled)


def spent(task_id: str, agent_usd: float | None, duration_s: float = 10.0, **fields: Any) -> dict[str, Any]:
    """A replayed evaluation of the default variant that spent ``agent_usd`` over 1,000 tokens."""
    return {
        "variant_id": "default",
        "task_id": task_id,
        "agent_type": "replay",
        "agent_model": None,
        "input_tokens": 800,
        "output_tokens": 200,
        "cost_usd": agent_usd,
        "duration_s": duration_s,
        **fields,
    }


# ----------------------------------------------------------------------------- from history


def test_each_row_task_is_forecast_at_the_median_and_p90_of_its_own_earlier_evaluations(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    task = replay_task(tmp_path / "tasks", "t")
    for index, (cost, seconds) in enumerate([(0.10, 10), (0.20, 20), (0.30, 30), (0.40, 40), (1.00, 50)]):
        judged = {"judge_input_tokens": 90, "judge_output_tokens": 10, "judge_cost_usd": 0.01}
        # the model the agent reported is not the key: the configured one (none here) is
        earlier_run(runs, index, [spent("t", cost, seconds, model=f"reported-{index}", **judged)])
    # not the same row-task, or not a usable observation: never counted
    earlier_run(runs, 10, [spent("t", 50.0, final_status="ERROR"), spent("t", 50.0, agent_model="claude-sonnet-4-5")])
    earlier_run(runs, 11, [spent("t", 50.0, variant_id="other"), spent("u", 50.0), spent("t", 50.0, agent_type="none")])

    result = forecast(selection(task, repeats=3), runs, workers=2)

    (row,) = result.rows
    assert (row.from_history, row.observations, row.evaluations, row.notes) == (True, 5, 3, ())
    assert row.median.agent_usd == pytest.approx(0.30)
    assert row.p90.agent_usd == pytest.approx(0.40 + 0.6 * (1.00 - 0.40))  # interpolated: position 0.9 x (5 - 1)
    assert (row.median.judges_usd, row.median.simulator_usd) == (pytest.approx(0.01), 0.0)
    assert (row.median.agent_tokens, row.median.judge_tokens, row.median.duration_s) == (1000, 100, 30)
    assert result.history_runs == 5
    total = result.total
    assert (total.evaluations, total.without_history) == (3, 0)
    assert total.usd == pytest.approx(3 * 0.31) and total.usd_p90 == pytest.approx(3 * (0.76 + 0.01))
    assert (total.median.agent_usd, total.median.judges_usd) == (pytest.approx(0.90), pytest.approx(0.03))
    assert total.wall_s == pytest.approx(3 * 30 / 2)  # three evaluations' work over two workers
    assert result.variants["default"] == total and total.usd_complete
    assert result.usd == total.usd


def test_a_cost_nobody_priced_is_unknown_and_the_totals_are_floors(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    tasks = [replay_task(tmp_path / "tasks", name) for name in ("priced", "unpriced", "free")]
    no_tokens = {"input_tokens": 0, "output_tokens": 0}
    earlier_run(runs, 0, [spent("priced", 0.5), spent("unpriced", None), spent("free", None, **no_tokens)])

    result = forecast(selection(*tasks), runs, workers=1)

    by_task = {row.task_id: row for row in result.rows}
    assert by_task["unpriced"].median.unknown == {"agent_usd"}  # tokens spent, no cost: not known
    assert by_task["free"].median.unknown == frozenset() and by_task["free"].median.agent_usd == 0.0
    assert result.total.usd == pytest.approx(0.5) and not result.total.usd_complete  # a floor
    assert result.total.to_json()["expected"]["unknown"] == ["agent_usd"]


def test_only_the_latest_evaluations_of_a_row_task_count(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    task = replay_task(tmp_path / "tasks", "t")
    for index in range(5):  # the oldest runs, at a price no longer paid
        earlier_run(runs, index, [spent("t", 9.0)])
    for index in range(5, 5 + HISTORY_DEPTH):
        earlier_run(runs, index, [spent("t", 0.2)])

    (row,) = forecast(selection(task), runs, workers=1).rows

    assert (row.observations, row.median.agent_usd, row.p90.agent_usd) == (HISTORY_DEPTH, 0.2, 0.2)


# ----------------------------------------------------------------------------- without history: the bound


def test_a_row_task_without_history_is_flagged_and_bounded_by_max_usd(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    seen, unseen = (replay_task(tmp_path / "tasks", name, run_limits={"max_usd": 0.5}) for name in ("seen", "unseen"))
    earlier_run(runs, 0, [spent("seen", 0.1)])

    result = forecast(selection(seen, unseen, repeats=2), runs, workers=1)

    row = next(row for row in result.rows if row.task_id == "unseen")
    assert (row.from_history, row.median.agent_usd, row.p90.agent_usd) == (False, 0.5, 0.5)
    assert any("max_usd 0.5" in note for note in row.notes), row.notes
    total = result.total
    assert (total.evaluations, total.without_history) == (4, 2)
    assert (total.median.usd, total.bound.usd) == (pytest.approx(0.2), pytest.approx(1.0))
    assert total.usd == pytest.approx(1.2) and total.usd_p90 == pytest.approx(1.2) and total.usd_complete
    assert row.to_json()["basis"] == "limits" and row.to_json()["bound"]["agent_usd"] == 0.5


@pytest.mark.parametrize(
    ("limits", "bound", "named"),
    [
        # max_turns turns of at most the model's window, at its dearest rate
        ({"max_turns": 3}, 3 * SONNET_4_5_WINDOW * 10e-6, "max_turns 3 x the 200,000-token window"),
        # a dialog's exchanges each have max_turns
        (
            {"max_turns": 2, "dialog": 5},
            10 * SONNET_4_5_WINDOW * 10e-6,
            "max_turns 2 x 5 exchanges: turns 10 x the 200,000-token window",
        ),
        # the tightest limit wins
        ({"max_turns": 3, "max_usd": 0.25}, 0.25, "max_usd 0.25"),
        # a token cap bounds the cost only when it counts the cached tokens too
        (
            {"max_turns": 3, "max_total_tokens": 1000, "count_cached_input": True, "count_cache_creation": True},
            1000 * 10e-6,
            "max_total_tokens 1,000",
        ),
        ({"max_total_tokens": 1000}, None, "leaves cached tokens out"),
        ({}, None, "no max_usd, max_turns, max_tool_calls or token cap"),
        # every model turn but the last makes a call: max_tool_calls + 1 turns
        (
            {"max_tool_calls": 20},
            21 * SONNET_4_5_WINDOW * 10e-6,
            "max_tool_calls 20: turns 21 x the 200,000-token window",
        ),
    ],
)
def test_the_agent_is_bounded_by_the_tightest_limit_that_covers_it(
    tmp_path: Path, limits: dict[str, Any], bound: float | None, named: str
) -> None:
    dialog = limits.pop("dialog", None)
    simulated = {"simulation": {"enabled": True, "persona": "p", "goal": "g", "max_turns": dialog}} if dialog else {}
    task = claude_code_task(tmp_path / "tasks", "t", run_limits=limits, **simulated)

    (row,) = forecast(selection(task), tmp_path / "runs", workers=1, prices=PriceBook(PRICES)).rows

    assert not row.from_history and any(named in note for note in row.notes), row.notes
    if bound is None:
        assert row.median.unknown >= {"agent_usd"} and not row.median.usd_complete
    else:
        assert row.median.agent_usd == pytest.approx(bound) and row.median.usd_complete


def test_judges_and_the_simulated_user_are_bounded_apart_from_the_agent(tmp_path: Path) -> None:
    judge = criterion("llm_judge", prompt="1.0 if a.txt is right", files=["a.txt"], max_tokens=500)
    task = claude_code_task(
        tmp_path / "tasks",
        "t",
        run_limits={"max_usd": 1.0, "task_timeout": 120},
        success_criteria=[criterion("file_exists", path="a.txt"), judge],
        simulation={"enabled": True, "persona": "p", "goal": "g", "max_turns": 4, "max_total_tokens": 5000},
    )
    resolution = selection(task)

    (row,) = forecast(resolution, tmp_path / "runs", workers=1, prices=PriceBook(PRICES)).rows

    prompt = judge_prompt_chars(
        resolution.row_tasks[0].task.success_criteria[1], resolution.row_tasks[0].task, task.parent
    )
    assert prompt >= len("1.0 if a.txt is right") + 20_000  # the instructions and one file at max_file_chars
    assert row.median.judges_usd == pytest.approx(prompt * 1e-6 + 500 * 10e-6)  # one call: prompt, then the answer
    assert row.median.judge_tokens == prompt + 500
    assert row.median.simulator_usd == pytest.approx(5000 * 10e-6)  # simulation.max_total_tokens: tighter
    assert (row.median.agent_usd, row.median.duration_s) == (1.0, 120)
    assert row.median.usd == pytest.approx(1.0 + row.median.judges_usd + 0.05)
    assert [note.split(":")[0] for note in row.notes] == ["agent", "judges", "simulated user", "time"]


def test_an_agentless_row_task_spends_nothing(tmp_path: Path) -> None:
    data = {
        "task_id": "plain",
        "description": "d",
        "agent": {"type": "none"},
        "success_criteria": [criterion("file_exists", path="a.txt")],
    }
    task = write_task(tmp_path / "tasks", data, "plain.yaml")

    (row,) = forecast(selection(task), tmp_path / "runs", workers=1).rows

    assert (row.median.usd, row.median.usd_complete, row.notes[0]) == (0.0, True, "no model call")


# ----------------------------------------------------------------------------- the budget at start


def test_the_budget_warning_names_the_forecast_only_when_it_exceeds_the_budget(tmp_path: Path) -> None:
    task = replay_task(tmp_path / "tasks", "t", run_limits={"max_usd": 0.5})
    result = forecast(selection(task, repeats=4), tmp_path / "runs", workers=1)  # 4 x the bound: $2.00

    assert budget_warning(result, 2.0) is None
    warning = budget_warning(result, 1.5)
    assert warning is not None and "$2.0000" in warning and "$1.5" in warning and "limits" in warning
