"""Run folders written straight from outcomes (no agent, no Dagster): for the comparison tests and benchmarks.

Each run gets its run.json (a ``RunSummary``: run id, variants, verdict, the
tasks' headline fields) and its rows in the
task_results and criteria_scores Parquet tables, exactly where a real run
puts them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from coder_eval_dagster.core.models.report import RunSummary, TaskRow
from coder_eval_dagster.core.models.results import EvaluationResult
from coder_eval_dagster.core.runs import TIMESTAMP
from coder_eval_dagster.core.tables import write_table


def evaluation(variant_id: str, task_id: str, status: str, replicate: int = 0, **fields: Any) -> dict[str, Any]:
    """A task_results row; success follows the status, the score follows success unless given."""
    success = status == "SUCCESS"
    base = task_id.split("/")[0]
    return {
        "variant_id": variant_id,
        "task_id": task_id,
        "base_task_id": base,
        "row_id": task_id.split("/", 1)[1] if "/" in task_id else None,
        "replicate": replicate,
        "final_status": status,
        "success": success,
        "weighted_score": 1.0 if success else 0.0,
        "duration_s": 1.0,
        "turns": 1,
        "input_tokens": 100,
        "output_tokens": 10,
        "cost_usd": 0.01,
        "tags": [base],
        **fields,
    }


def evaluation_result(variant_id: str, task_id: str, status: str, **fields: Any) -> EvaluationResult:
    """The same evaluation as a task.json would hold it (no criteria, no trajectory)."""
    row = evaluation(variant_id, task_id, status, **fields)
    return EvaluationResult(run_id="r", agent_type="none", **{k: v for k, v in row.items() if k != "row_id"})


def write_run(runs_dir: Path, run_ts: datetime, rows: list[dict[str, Any]], suffix: str = "") -> Path:
    """A run folder named by ``run_ts`` holding ``rows`` (task_results) and one criterion per row."""
    run_id = run_ts.strftime(TIMESTAMP) + suffix
    run_dir = runs_dir / run_id
    run_dir.mkdir(parents=True)
    common = {"run_id": run_id, "run_ts": run_ts}
    results = [{**common, **row} for row in rows]
    criteria = [
        {
            **common,
            **{key: row[key] for key in ("variant_id", "task_id", "base_task_id", "row_id", "replicate")},
            "criterion_index": 0,
            "criterion_type": "run_command",
            "description": "the tests pass",
            "score": row["weighted_score"],
            "passed": row["success"],
            "gating": True,
            "weight": 1.0,
            "pass_threshold": 1.0,
        }
        for row in rows
    ]
    write_table(runs_dir / "tables", "task_results", run_id, run_ts, results)
    write_table(runs_dir / "tables", "criteria_scores", run_id, run_ts, criteria)
    report = RunSummary(
        run_id=run_id,
        start_time=run_ts.isoformat(),
        end_time=(run_ts + timedelta(minutes=1)).isoformat(),
        variants=list(dict.fromkeys(row["variant_id"] for row in rows)),
        passed=all(row["success"] for row in rows),
        task_results=[
            TaskRow(
                task_id=row["task_id"],
                variant_id=row["variant_id"],
                replicate_index=row["replicate"],
                status=row["final_status"],
                success=row["success"],
                weighted_score=row["weighted_score"],
                duration=row["duration_s"],
            )
            for row in rows
        ],
    )
    (run_dir / "run.json").write_text(report.model_dump_json(), encoding="utf-8")
    return run_dir
