"""Benchmark: the file sensor at 10,000 row-tasks; a 200-partition backfill from GraphQL vs coder-eval run.

python bench/bench_operations.py [--rows 10000] [--partitions 200]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coder_eval_dagster.defs.resources import CoderEvalSettings, RunSpecConfig
from coder_eval_dagster.defs.sensors import task_files_sensor
from tests.support.dagster_services import (
    DagsterServices,
    apply_partition_requests,
    launch_backfill,
    prepare_instance,
    wait_for_backfill,
)

TASK = """\
task_id: {task_id}
description: benchmark
agent: {{type: none}}
sandbox: {{python: null}}
dataset: {{paths: ["rows.jsonl"]}}
success_criteria:
  - {{type: run_command, command: "true", description: "true"}}
  - {{type: file_exists, path: "${{row.id}}.txt", description: "a row file", weight: 0}}
"""


def _tasks(folder: Path, rows: int, task_id: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "rows.jsonl").write_text("".join(json.dumps({"id": f"r{i:05d}"}) + "\n" for i in range(rows)))
    (folder / "task.yaml").write_text(TASK.format(task_id=task_id))
    return folder


def sensor_ticks(rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, dg.instance_for_test() as instance:
        settings = CoderEvalSettings(spec=RunSpecConfig(task_paths=[str(_tasks(Path(tmp) / "tasks", rows, "big"))]))
        cursor = None
        for label in ("first tick (all new)", "unchanged tick"):
            context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"settings": settings})
            start = time.perf_counter()
            result = task_files_sensor(context)
            seconds = time.perf_counter() - start
            apply_partition_requests(instance, result)
            cursor = result.cursor
            print(f"sensor, {rows} row-tasks, {label}: {seconds:.2f} s, {len(result.run_requests)} run request(s)")


def backfill_vs_cli(partitions: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tasks = _tasks(work / "tasks", partitions, "bf")
        home, workspace = prepare_instance(work)
        env = {**os.environ, "DAGSTER_HOME": str(home)}
        cli = shutil.which("coder-eval") or str(Path(sys.executable).parent / "coder-eval")
        start = time.perf_counter()
        subprocess.run(
            [cli, "run", str(tasks), "--runs-dir", str(work / "cli-runs")],
            env=env,
            check=True,
            capture_output=True,
            timeout=3600,
        )
        cli_seconds = time.perf_counter() - start
        services_env = {
            "CODER_EVAL_TASK_PATHS": str(tasks),
            "CODER_EVAL_RUNS_DIR": str(work / "ui-runs"),
            "DAGSTER_EVENT_BATCH_SIZE": "1000",
        }
        with DagsterServices(home, workspace, services_env, work / "logs") as services:
            start = time.perf_counter()
            backfill_id = launch_backfill(
                services, ["resolved_tasks", "sandbox_runs", "criteria_scores", "suite_metrics"]
            )
            backfill = wait_for_backfill(services, backfill_id, timeout=3600)
            ui_seconds = time.perf_counter() - start
        print(
            f"{partitions} partitions: coder-eval run {cli_seconds:.1f} s; GraphQL backfill {ui_seconds:.1f} s "
            f"({backfill['status']}, {len(backfill['runs'])} run(s))"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=200)
    args = parser.parse_args()
    sensor_ticks(args.rows)
    backfill_vs_cli(args.partitions)


if __name__ == "__main__":
    main()
