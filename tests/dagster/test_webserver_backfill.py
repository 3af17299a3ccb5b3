"""A partitioned backfill launched through the real webserver's GraphQL API and run by the real daemon."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from ..support.dagster_services import DagsterServices, launch_backfill, prepare_instance, wait_for_backfill
from ..support.helpers import criterion, run_folders, task_with, write_task

pytestmark = pytest.mark.slow


def test_backfill_through_graphql(tmp_path: Path) -> None:
    home, workspace = prepare_instance(tmp_path)
    agentless = {"agent": {"type": "none"}, "initial_prompt": None, "sandbox": {"python": None}}
    write_task(
        tmp_path / "tasks",
        task_with(
            task_id="one",
            **agentless,
            pre_run=[{"command": "echo 1 > a.txt"}],
            success_criteria=[criterion("file_exists", path="a.txt")],
        ),
        "one.yaml",
    )
    write_task(
        tmp_path / "tasks",
        task_with(
            task_id="two",
            **agentless,
            dataset={"rows": [{"id": "x"}, {"id": "y"}]},
            success_criteria=[criterion("run_command", command="true")],
        ),
        "two.yaml",
    )
    env = {
        "CODER_EVAL_TASK_PATHS": str(tmp_path / "tasks"),
        "CODER_EVAL_RUNS_DIR": str(tmp_path / "runs"),
        "DAGSTER_EVENT_BATCH_SIZE": "1000",
    }
    # register the partitions as the sensor would
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("task", ["one", "two/x", "two/y"])
        instance.add_dynamic_partitions("variant", ["default"])
    with DagsterServices(home, workspace, env, tmp_path / "logs") as services:
        backfill_id = launch_backfill(services, ["resolved_tasks", "sandbox_runs", "criteria_scores", "suite_metrics"])
        backfill = wait_for_backfill(services, backfill_id, timeout=300)
    logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in (tmp_path / "logs").iterdir())
    assert backfill["status"] in ("COMPLETED", "COMPLETED_SUCCESS"), (backfill, logs)
    assert backfill["runs"] and all(r["status"] == "SUCCESS" for r in backfill["runs"]), backfill
    run_dirs = run_folders(tmp_path / "runs")
    tasks = sorted(t["task_id"] for d in run_dirs for t in json.loads((d / "run.json").read_text())["task_results"])
    assert tasks == ["one", "two/x", "two/y"]
    assert all(json.loads((d / "run.json").read_text())["passed"] for d in run_dirs)
    results = pd.read_parquet(tmp_path / "runs" / "tables" / "task_results")
    assert sorted(results["task_id"]) == ["one", "two/x", "two/y"] and results["success"].all()
