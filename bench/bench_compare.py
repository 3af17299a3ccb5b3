"""Benchmark: `coder-eval compare` over 2 variants x 10,000 rows; `coder-eval history` over 100 runs x 1,000 rows.

python bench/bench_compare.py [--rows 10000] [--runs 100] [--history-rows 1000] [--repeat 3]

Both time the installed console script in a subprocess (start-up included)
on run folders synthesized straight into the Parquet tables. Target: each
under 3 s. Then the refresh of <runs-dir>/index.html over those runs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agentless import children_cpu
from coder_eval_dagster.core.compare.index import write_index
from coder_eval_dagster.core.layout import INDEX_ROW
from tests.support.synthetic_runs import evaluation, write_run

CLI = Path(sys.executable).parent / "coder-eval"
START = datetime(2026, 9, 1, 2, 0, tzinfo=UTC)


def rows_of(count: int, variants: tuple[str, ...], rng: random.Random) -> list[dict]:
    """``count`` row-tasks in 100 base tasks; the second variant fails 5 % more often; 1 % ERROR."""
    rows = []
    for i in range(count):
        task_id = f"task{i % 100:03d}/row{i:05d}"
        for shift, variant in enumerate(variants):
            draw = rng.random()
            status = "ERROR" if draw < 0.01 else ("FAILED" if draw < 0.30 + 0.05 * shift else "SUCCESS")
            rows.append(evaluation(variant, task_id, status, cost_usd=rng.random() / 10, turns=rng.randint(1, 30)))
    return rows


CPU_TIMES: list[float] = []  # the child's user + system time of each timed command (wall time suffers from other load)


def timed(*args: str | Path) -> float:
    before = children_cpu()
    started = time.perf_counter()
    done = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - started
    CPU_TIMES.append(children_cpu() - before)
    if done.returncode != 0:
        raise SystemExit(f"failed: {args}: {done.stderr}")
    return elapsed


def report(label: str, times: list[float]) -> None:
    cpu = CPU_TIMES[-len(times) :] if len(CPU_TIMES) >= len(times) else []
    cpu_text = f"; CPU best {min(cpu):.2f} s" if cpu else ""
    print(f"{label}: best {min(times):.2f} s, median {statistics.median(times):.2f} s over {len(times)}{cpu_text}")
    CPU_TIMES.clear()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--history-rows", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as scratch:
        runs_dir = Path(scratch) / "runs"
        run = write_run(runs_dir, START, rows_of(args.rows, ("baseline", "candidate"), rng))
        out = Path(scratch) / "out.json"
        report(
            f"compare, 2 variants x {args.rows} rows (json)",
            [timed("compare", run, "--format", "json", "-o", out) for _ in range(args.repeat)],
        )
        report(
            f"compare, 2 variants x {args.rows} rows (html)",
            [timed("compare", run, "--format", "html", "-o", Path(scratch) / "page.html") for _ in range(args.repeat)],
        )
        history_dir = Path(scratch) / "history"
        for night in range(args.runs):
            write_run(history_dir, START + timedelta(days=night), rows_of(args.history_rows, ("default",), rng))
        report(
            f"history, {args.runs} runs x {args.history_rows} rows (table)",
            [timed("history", history_dir) for _ in range(args.repeat)],
        )
        report(
            f"history, {args.runs} runs x {args.history_rows} rows (html)",
            [timed("history", history_dir, "--format", "html") for _ in range(args.repeat)],
        )
        label = f"runs index, {args.runs} runs x {args.history_rows} rows (in-process)"
        report(f"{label}, no row cached", [index_time(history_dir, cold=True) for _ in range(args.repeat)])
        report(f"{label}, every row cached", [index_time(history_dir, cold=False) for _ in range(args.repeat)])


def index_time(runs_dir: Path, cold: bool) -> float:
    """The refresh every run ends with (cold: as if no run folder had its row rendered yet)."""
    if cold:
        for cached in runs_dir.glob(f"*/{INDEX_ROW}"):
            cached.unlink()
    started = time.perf_counter()
    write_index(runs_dir)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
