"""The forecast's history of the judges after a rescore reused their verdicts.

A reused verdict costs nothing in ``task_results`` (no call was made), but a
new run calls its judge again: the history counts it at what it cost when it
was made, which its ``criteria_scores`` row keeps (``judge_usage``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.forecast.history import Key, observed
from coder_eval_dagster.core.tables import write_tables

RUN_TS = datetime(2026, 11, 1, tzinfo=UTC)
KEY: Key = ("default", "t", "replay", None)
COMMON = {"run_id": "run-01", "run_ts": RUN_TS, "variant_id": "default", "task_id": "t", "base_task_id": "t"}


def usage(cost: float | None) -> dict[str, Any]:
    """One llm_judge call of 1,000 prompt and 200 answer tokens."""
    return {"input_tokens": 1000, "output_tokens": 200, "cost_usd": cost, "cost_source": cost and "priced"}


def verdict(index: int, replicate: int, reused: bool, cost: float | None = 0.006) -> dict[str, Any]:
    return {
        **COMMON,
        "replicate": replicate,
        "criterion_index": index,
        "criterion_type": "llm_judge",
        "judge_usage": usage(cost),
        "reused": reused,
    }


def evaluation(replicate: int, verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    """The task_results row of a replayed evaluation whose judges gave ``verdicts``: the reused ones cost nothing."""
    paid = [v for v in verdicts if not v["reused"]]
    return {
        **COMMON,
        "replicate": replicate,
        "final_status": "SUCCESS",
        "agent_type": "replay",
        "agent_model": None,
        "input_tokens": 800,
        "output_tokens": 200,
        "cost_usd": 0.03,
        "cost_complete": True,
        "duration_s": 10.0,
        "judge_input_tokens": 1000 * len(paid),
        "judge_output_tokens": 200 * len(paid),
        "judge_cost_usd": sum(v["judge_usage"]["cost_usd"] for v in paid) if verdicts else None,
    }


def rescored(tables: Path, *evaluations: list[dict[str, Any]]) -> None:
    """One run's tables after a rescore: one evaluation (a replicate) per list of verdicts."""
    write_tables(
        tables,
        "run-01",
        RUN_TS,
        {
            "task_results": [evaluation(replicate, verdicts) for replicate, verdicts in enumerate(evaluations)],
            "criteria_scores": [verdict for verdicts in evaluations for verdict in verdicts],
        },
    )


def test_a_reused_verdict_counts_at_what_it_cost_when_it_was_made(tmp_path: Path) -> None:
    both_reused = [verdict(0, 0, reused=True), verdict(1, 0, reused=True)]
    one_reused = [verdict(0, 1, reused=True), verdict(1, 1, reused=False)]
    none_reused = [verdict(0, 2, reused=False), verdict(1, 2, reused=False)]
    rescored(tmp_path, both_reused, one_reused, none_reused)

    history = observed(tmp_path, [KEY])

    row = history.rows[KEY]
    assert row.observations == 3 and history.warnings == []
    assert row.median.judges_usd == pytest.approx(0.012) and row.p90.judges_usd == pytest.approx(0.012)
    assert (row.median.judge_tokens, row.p90.judge_tokens) == (2400, 2400)
    assert row.median.agent_usd == pytest.approx(0.03) and not row.median.unknown


def test_a_reused_verdict_nobody_priced_leaves_the_judges_part_unknown(tmp_path: Path) -> None:
    rescored(tmp_path, [verdict(0, 0, reused=True, cost=None), verdict(1, 0, reused=False)])

    row = observed(tmp_path, [KEY]).rows[KEY]

    assert row.median.unknown == {"judges_usd"} and row.median.judge_tokens == 2400


def test_history_without_criteria_scores_reads_as_before(tmp_path: Path) -> None:
    write_tables(tmp_path, "run-01", RUN_TS, {"task_results": [evaluation(0, [])]})

    row = observed(tmp_path, [KEY]).rows[KEY]

    assert (row.median.judges_usd, row.median.judge_tokens) == (0.0, 0)
    assert row.median.agent_usd == pytest.approx(0.03)
