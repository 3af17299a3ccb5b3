"""Benchmark: agentless rows end to end through `coder-eval run`.

1. Overhead: N rows, each with one pre_run and one run_command, through the
   real CLI (Dagster instance, reports, tables), against a plain Python loop
   that runs the same two commands in N fresh temp folders. Target: <= 4x.
   A one-row run first creates the instance's databases (a one-time cost).
2. Parallel efficiency: 40 rows that sleep 1 s in pre_run at --concurrency 8.
   Efficiency = ideal time (40 x 1 s / 8) / actual. Target: >= 0.8.

    python bench/bench_agentless.py [--rows 1000] [--concurrency 2]
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

TASK = """\
task_id: {task_id}
description: "benchmark row"
agent: {{type: none}}
sandbox: {{python: null}}
dataset: {{paths: ["rows.jsonl"]}}
pre_run:
  - command: "{pre}"
success_criteria:
  - type: run_command
    command: "{check}"
    description: "the row's check"
"""
PRE, CHECK = "echo ready > marker.txt", "test -f marker.txt"


def _project(folder: Path, task_id: str, rows: int, pre: str, check: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "rows.jsonl").write_text("".join(json.dumps({"id": f"r{i:05d}"}) + "\n" for i in range(rows)))
    (folder / "task.yaml").write_text(TASK.format(task_id=task_id, pre=pre, check=check))
    return folder / "task.yaml"


def _run_seconds(runs: Path) -> float:
    """The newest run's own duration (run.json), without process start-up."""
    from datetime import datetime

    newest = max((p for p in runs.iterdir() if p.is_dir() and p.name != "tables"), key=lambda p: p.stat().st_mtime)
    document = json.loads((newest / "run.json").read_text())
    stamps = [datetime.fromisoformat(document[k].replace("Z", "+00:00")) for k in ("started_at", "finished_at")]
    return (stamps[1] - stamps[0]).total_seconds()


def _cli(task: Path, workdir: Path, concurrency: int) -> float:
    cli = shutil.which("coder-eval") or str(Path(sys.executable).parent / "coder-eval")
    env = {**os.environ, "DAGSTER_HOME": str(workdir / "dagster_home")}
    start = time.perf_counter()
    command = [cli, "run", str(task), "--runs-dir", str(workdir / "runs"), "--concurrency", str(concurrency)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"coder-eval run failed ({done.returncode}):\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}")
    return elapsed


def _plain_loop(rows: int) -> float:
    start = time.perf_counter()
    for _ in range(rows):
        with tempfile.TemporaryDirectory() as folder:
            subprocess.run(["/bin/sh", "-c", PRE], cwd=folder, check=True, timeout=30)
            subprocess.run(["/bin/sh", "-c", CHECK], cwd=folder, check=True, timeout=30)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-efficiency", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _cli(_project(work / "warmup", "warmup", 1, PRE, CHECK), work, 1)  # creates the instance's databases
        task = _project(work / "overhead", "overhead", args.rows, PRE, CHECK)
        loop = _plain_loop(args.rows)
        run = _cli(task, work, args.concurrency)
        print(
            f"overhead: {args.rows} rows, concurrency {args.concurrency}: coder-eval run {run:.1f} s, "
            f"plain loop {loop:.1f} s, ratio {run / loop:.2f}x (target <= 4x)"
        )
        if not args.skip_efficiency:
            sleepy = _project(work / "sleepy", "sleepy", 40, "sleep 1", "true")
            actual = _cli(sleepy, work, 8)
            inside = _run_seconds(work / "runs")
            ideal = 40 * 1.0 / 8
            print(
                f"efficiency: 40 rows x 1 s at concurrency 8, ideal {ideal:.1f} s: command {actual:.2f} s "
                f"(efficiency {ideal / actual:.2f}), run itself {inside:.2f} s (efficiency {ideal / inside:.2f}); "
                "target >= 0.8"
            )


if __name__ == "__main__":
    main()
