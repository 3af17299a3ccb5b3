"""Run folders written straight from outcomes (no agent, no Dagster): for the comparison and viewer tests, benchmarks.

Each run gets its run.json (a ``RunSummary``: run id, variants, verdict, the
tasks' headline fields) and its rows in the
task_results and criteria_scores Parquet tables, exactly where a real run
puts them.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from coder_eval_dagster.core.layout import REPORT_FILE, evaluation_folder
from coder_eval_dagster.core.models.report import RunSummary, TaskRow
from coder_eval_dagster.core.models.results import (
    CriterionResult,
    EvaluationResult,
    TokenUsage,
    ToolCallRecord,
    TurnRecord,
)
from coder_eval_dagster.core.reports.run_viewer import write_run_viewer
from coder_eval_dagster.core.reports.task_html import render_task_html
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


# ----------------------------------------------------------------------------- a large run, for the run viewer

VIEWER_SUITES = 10
OUTCOMES = (("SUCCESS", 0.8), ("FAILURE", 0.93), ("ERROR", 0.98), ("TIMEOUT", 1.0))  # cumulative shares


def viewer_results(
    count: int, variants: tuple[str, ...] = ("baseline", "with-hint"), seed: int = 26
) -> list[EvaluationResult]:
    """``count`` evaluations of dataset rows (``suite<k>/row<i>``) under ``variants``: mostly SUCCESS, some FAILURE on
    one of three criteria (with its reason), some ERROR or TIMEOUT; each with tags, two turns, tokens and cost."""
    rng = random.Random(seed)
    return [_viewer_result(rng, index, variant) for index in range(count // len(variants)) for variant in variants]


def _viewer_result(rng: random.Random, index: int, variant: str) -> EvaluationResult:
    suite, draw = f"suite{index % VIEWER_SUITES}", rng.random()
    status = next(name for name, share in OUTCOMES if draw < share)
    criteria = [
        CriterionResult(
            index=0,
            type="run_command",
            description=f"{suite}: the tests pass",
            score=1.0,
            passed=True,
            gating=True,
            weight=1.0,
            pass_threshold=1.0,
        ),
        CriterionResult(
            index=1,
            type="json_check",
            description=f"{suite}: output.json is valid",
            score=1.0,
            passed=True,
            gating=True,
            weight=1.0,
            pass_threshold=1.0,
        ),
        CriterionResult(
            index=2,
            type="llm_judge",
            description=f"{suite}: the judge approves",
            score=0.9,
            passed=True,
            gating=True,
            weight=1.0,
            pass_threshold=0.5,
        ),
    ]
    if status == "FAILURE":
        failing = criteria[index % 3]
        failing.passed, failing.score = False, 0.0
        failing.error = f"exit code 1: AssertionError in test_row{index}" if index % 3 == 0 else None
        failing.details = {"rationale": f"the answer misses step {index % 7}"} if index % 3 == 2 else {}
    turns = [
        TurnRecord(
            index=turn,
            text=f"turn {turn} of row {index}",
            input_tokens=rng.randint(500, 5000),
            output_tokens=rng.randint(50, 500),
            cost_usd=round(rng.uniform(0.001, 0.05), 6),
            calls=[
                ToolCallRecord(
                    turn=turn,
                    seq=1,
                    tool="Bash",
                    parameters={"command": "pytest -q"},
                    status="success",
                    duration_ms=120.0,
                    output="1 passed",
                )
            ],
        )
        for turn in (1, 2)
    ]
    return EvaluationResult(
        run_id="viewer",
        task_id=f"{suite}/row{index:05d}",
        base_task_id=suite,
        row_id=f"row{index:05d}",
        variant_id=variant,
        replicate=0,
        agent_type="replay",
        tags=[suite, "nightly", *(["slow"] if index % 5 == 0 else [])],
        final_status=status,
        success=status == "SUCCESS",
        weighted_score=1.0 if status == "SUCCESS" else round(rng.uniform(0, 0.6), 3),
        error=f"sandbox setup failed: pip install exited 1 (row {index})" if status == "ERROR" else None,
        duration_s=round(rng.uniform(5, 300), 2),
        turns=len(turns),
        total_token_usage=TokenUsage.of_turns(turns),
        criteria=criteria if status != "ERROR" else [],
        trajectory=turns,
    )


def write_viewer_run(runs_dir: Path, results: list[EvaluationResult], run_id: str = "2026-12-01T00-00-00Z") -> Path:
    """A run folder of ``results``: each evaluation's task.html, and the run viewer."""
    run_dir = runs_dir / run_id
    for result in results:
        folder = evaluation_folder(run_dir, result.variant_id, result.task_id, result.replicate)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / REPORT_FILE).write_text(render_task_html(result), encoding="utf-8")
    write_run_viewer(run_dir, results, list(dict.fromkeys(r.variant_id for r in results)))
    return run_dir


# ----------------------------------------------------------------------------- descriptions carrying a row's values

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "sigma")
ASKED = ("answers the question: {q}", "cites a source for: {q}", "stays on topic for {q}, and says so")


def questioned_results(count: int, seed: int = 26) -> list[EvaluationResult]:
    """``count`` rows of one dataset task whose three criteria's descriptions carry the row's question
    (``description: "answers the question: ${row.question}"``, as tasks/arithmetic_dataset.yaml does); every fifth
    row fails its first criterion."""
    rng = random.Random(seed)
    return [_questioned_result(index, " ".join(rng.choices(WORDS, k=23))) for index in range(count)]


def _questioned_result(index: int, question: str) -> EvaluationResult:
    failed = index % 5 == 0
    criteria = [
        CriterionResult(
            index=position,
            type="run_command",
            description=asked.format(q=question),
            score=0.0 if failed and position == 0 else 1.0,
            passed=not (failed and position == 0),
            gating=True,
            weight=1.0,
            pass_threshold=1.0,
        )
        for position, asked in enumerate(ASKED)
    ]
    return EvaluationResult(
        run_id="questions",
        task_id=f"q/q{index:05d}",
        base_task_id="q",
        row_id=f"q{index:05d}",
        variant_id="default",
        replicate=0,
        agent_type="none",
        tags=["scale"],
        final_status="FAILURE" if failed else "SUCCESS",
        success=not failed,
        weighted_score=0.667 if failed else 1.0,
        duration_s=0.03,
        criteria=criteria,
    )
