"""Benchmark: agentless rows end to end through `coder-eval run`, as a user's whole process sees it.

Every `coder-eval run` below is a fresh process on a fresh DAGSTER_HOME.

1. Start-up: one row (median of 5). Target: < 1.5 s.
2. Overhead: N rows, each with one pre_run and one run_command, through the
   real CLI (Dagster instance, reports, tables), against a plain Python loop
   run as a whole process that does the same per row (mkdtemp, two `sh -c`,
   rmtree). Target: <= 3x.
3. Parallel efficiency: 40 rows that sleep 1 s in pre_run at --concurrency 8.
   Efficiency = ideal time (40 x 1 s / 8) / the whole command. Target: >= 0.75.
4. Scale: 10 x N rows in one run: time (target within 11x of N rows) and peak RSS (target < 1 GB).

    python bench/bench_agentless.py [--rows 1000] [--concurrency 2] [--skip-scale]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def newest_run(runs: Path) -> Path:
    """The runs folder's newest run folder (not ``latest``, ``tables``, ``index.html`` or ``.cache``)."""
    from coder_eval_dagster.core.layout import is_run_folder

    folders = [p for p in runs.iterdir() if not p.is_symlink() and is_run_folder(p)]
    return max(folders, key=lambda p: p.stat().st_mtime)


def _run_seconds(runs: Path) -> float:
    """The newest run's own duration (run.json), without process start-up."""
    from datetime import datetime

    document = json.loads((newest_run(runs) / "run.json").read_text())
    stamps = [datetime.fromisoformat(document[k].replace("Z", "+00:00")) for k in ("start_time", "end_time")]
    return (stamps[1] - stamps[0]).total_seconds()


def children_cpu() -> float:
    """User + system CPU seconds of this process's finished children so far (a timed command and whatever it
    ran): a command's share is a difference. Unlike wall time, barely moved by what else the machine does."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _cli(
    task: Path, workdir: Path, concurrency: int, executable: str | None = None, home: Path | None = None
) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one `coder-eval run` (``executable``, else this venv's) on a fresh
    instance, or on the instance at ``home`` (the soak runs many on one)."""
    cli = executable or shutil.which("coder-eval") or str(Path(sys.executable).parent / "coder-eval")
    home = home or Path(tempfile.mkdtemp(dir=workdir, prefix="dagster_home-"))
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    command = [cli, "run", str(task), "--runs-dir", str(workdir / "runs"), "--concurrency", str(concurrency)]
    timed = ["/usr/bin/time", "-f", "%M", *command] if Path("/usr/bin/time").exists() else command
    start = time.perf_counter()
    done = subprocess.run(timed, capture_output=True, text=True, env=env, timeout=3600)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"coder-eval run failed ({done.returncode}):\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}")
    last = done.stderr.strip().splitlines()[-1] if timed is not command else ""
    return elapsed, int(last) / 1024 if last.isdigit() else float("nan")


LOOP = """
import shutil, subprocess, sys, tempfile
for _ in range(int(sys.argv[1])):
    folder = tempfile.mkdtemp()
    subprocess.run(["/bin/sh", "-c", sys.argv[2]], cwd=folder, check=True, timeout=30)
    subprocess.run(["/bin/sh", "-c", sys.argv[3]], cwd=folder, check=True, timeout=30)
    shutil.rmtree(folder)
"""


def _plain_loop(rows: int) -> float:
    """The same commands per row, as a whole Python process."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", LOOP, str(rows), PRE, CHECK], check=True, timeout=3600)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-efficiency", action="store_true")
    parser.add_argument("--skip-scale", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        one = _project(work / "one", "one", 1, PRE, CHECK)
        starts = sorted(_cli(one, work, 1)[0] for _ in range(5))
        print(f"start-up: one row on a fresh instance, median {starts[2]:.2f} s (min {starts[0]:.2f}); target < 1.5 s")
        task = _project(work / "overhead", "overhead", args.rows, PRE, CHECK)
        loop = _plain_loop(args.rows)
        run, rss = _cli(task, work, args.concurrency)
        print(
            f"overhead: {args.rows} rows, concurrency {args.concurrency}: coder-eval run {run:.1f} s "
            f"(peak RSS {rss:.0f} MB), plain loop {loop:.1f} s, ratio {run / loop:.2f}x (target <= 3x)"
        )
        if not args.skip_efficiency:
            sleepy = _project(work / "sleepy", "sleepy", 40, "sleep 1", "true")
            actual, _ = _cli(sleepy, work, 8)
            inside = _run_seconds(work / "runs")
            ideal = 40 * 1.0 / 8
            print(
                f"efficiency: 40 rows x 1 s at concurrency 8, ideal {ideal:.1f} s: command {actual:.2f} s "
                f"(efficiency {ideal / actual:.2f}), run itself {inside:.2f} s (efficiency {ideal / inside:.2f}); "
                "target >= 0.75"
            )
        if not args.skip_scale:
            big = _project(work / "scale", "scale", 10 * args.rows, PRE, CHECK)
            seconds, peak = _cli(big, work, args.concurrency)
            print(
                f"scale: {10 * args.rows} rows in one run {seconds:.1f} s ({seconds / run:.1f}x the {args.rows}-row "
                f"run; target <= 11x), peak RSS {peak:.0f} MB (target < 1024 MB)"
            )


if __name__ == "__main__":
    main()
