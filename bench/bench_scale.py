"""Benchmark: 40 partitions x 2 s, as 4 chunk runs of 10 in run containers (DockerRunLauncher, 10 agents per
run container) vs the single-run CLI on the same machine; the per-run overhead of a launched container.

python bench/bench_scale.py [--rows 40] [--per-run 10] [--seconds 2]

Needs what tests/test_deploy_docker.py needs: a Docker engine (started if absent), PostgreSQL's binaries,
and the code image (built offline here when its inputs changed). Every evaluation uses the docker driver.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dagster as dg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coder_eval_dagster.code_image import DEFAULT_TAG, build_code_image
from tests.support.dagster_services import launch_backfill, prepare_instance, wait_for_backfill
from tests.support.docker_deployment import deployed
from tests.support.docker_engine import ensure_engine_and_image
from tests.support.postgres_server import running_postgres

BACKFILLED = ["resolved_tasks", "sandbox_runs", "criteria_scores", "suite_metrics"]


def _tasks(root: Path, rows: int, seconds: float) -> list[str]:
    folder = root / "tasks"
    folder.mkdir(parents=True)
    task = {
        "task_id": "wide",
        "description": "benchmark",
        "agent": {"type": "none"},
        "sandbox": {"driver": "docker", "python": None},
        "dataset": {"rows": [{"id": f"r{i:03d}"} for i in range(rows)]},
        "pre_run": [{"command": f"sleep {seconds}"}],  # the 'agent's' time
        "success_criteria": [{"type": "run_command", "command": "true", "description": "true"}],
    }
    (folder / "task.yaml").write_text(json.dumps(task))
    return [f"wide/r{i:03d}" for i in range(rows)]


def cli_seconds(root: Path, concurrency: int) -> float:
    home, _ = prepare_instance(root / f"cli-{concurrency}")
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    cli = str(Path(sys.executable).parent / "coder-eval")
    command = [cli, "run", str(root / "tasks"), "--runs-dir", str(root / f"cli-runs-{concurrency}")]
    start = time.perf_counter()
    subprocess.run(
        [*command, "--concurrency", str(concurrency)], env=env, check=True, capture_output=True, timeout=3600
    )
    return time.perf_counter() - start


def _event_time(instance: dg.DagsterInstance, run_id: str, kind: dg.DagsterEventType, text: str = "") -> float:
    records = instance.get_records_for_run(run_id, of_type=kind).records
    return min(r.event_log_entry.timestamp for r in records if text in (r.event_log_entry.message or ""))


def deployment_seconds(root: Path, postgres: str, keys: list[str], per_run: int) -> None:
    with deployed(root, postgres, DEFAULT_TAG, keys, per_run, per_run) as (services, instance):
        start = time.perf_counter()
        backfill_id = launch_backfill(services, BACKFILLED)
        backfill = wait_for_backfill(services, backfill_id, timeout=3600)
        seconds = time.perf_counter() - start
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
        # a launched container's cost: from "launching in a new container" to the run's first event inside it
        overheads = [
            _event_time(instance, r.run_id, dg.DagsterEventType.RUN_START)
            - _event_time(instance, r.run_id, dg.DagsterEventType.ENGINE_EVENT, "Launching run in a new container")
            for r in runs
        ]
    print(
        f"deployment: {len(keys)} partitions, {per_run} per run: {seconds:.1f} s end to end "
        f"({backfill['status']}, {len(runs)} runs); container launch to run start: median "
        f"{statistics.median(overheads):.1f} s, max {max(overheads):.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--per-run", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=2)
    args = parser.parse_args()
    ensure_engine_and_image()
    build_code_image(DEFAULT_TAG, say=lambda _: None)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp, running_postgres() as postgres:
        root = Path(tmp)
        keys = _tasks(root, args.rows, args.seconds)
        for concurrency in (args.per_run, args.rows):
            print(f"coder-eval run, --concurrency {concurrency}: {cli_seconds(root, concurrency):.1f} s")
        deployment_seconds(root, postgres, keys, args.per_run)


if __name__ == "__main__":
    main()
