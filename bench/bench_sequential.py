"""Benchmark: the sequential A/B's decision after each batch, as a run loop asks it. Target: under 50 ms at 10,000 rows.

    python bench/bench_sequential.py [--rows 10000] [--batch-rows 100 20] [--repeats 3]

Each measurement is a fresh Python process (start-up and the numpy import
included), which plays a run loop: 10,000 paired rows arrive in batches and
after each one the whole sequence so far is decided again
(``sequential_decision`` on every difference seen, as the run loop calls it).
It prints the process's wall time, the import, the median of 20 decisions at
all the rows, the slowest decision of the loop (on a loaded machine, mostly
the scheduler's) and the loop's total.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys, time
started = time.perf_counter()
import numpy as np
from coder_eval_dagster.core.compare.sequential import sequential_decision
imported = time.perf_counter() - started
rows, batch_rows = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
differences = (rng.random(rows) < 0.55).astype(float) - (rng.random(rows) < 0.5)  # a small true difference
batches = np.arange(rows) // batch_rows + 1
times = []
for end in range(batch_rows, rows + 1, batch_rows):
    before = time.perf_counter()
    result = sequential_decision(differences[:end], batches[:end])
    times.append(time.perf_counter() - before)
at_all_rows = []
for _ in range(20):
    before = time.perf_counter()
    sequential_decision(differences, batches)
    at_all_rows.append(time.perf_counter() - before)
print(json.dumps({"import_s": imported, "all_rows_s": sorted(at_all_rows)[10], "slowest_s": max(times),
                  "loop_s": sum(times), "decisions": len(times), "decision": result.decision}))
"""


def _one_process(rows: int, batch_rows: int) -> tuple[float, dict[str, float]]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(rows), str(batch_rows)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"the child failed:\n{done.stderr[-2000:]}")
    return wall, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--batch-rows", type=int, nargs="+", default=[100, 20])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for batch_rows in args.batch_rows:
        runs = [_one_process(args.rows, batch_rows) for _ in range(args.repeats)]
        wall = statistics.median(wall for wall, _ in runs)
        ms = {key: statistics.median(f[key] for _, f in runs) * 1000 for key in runs[0][1] if key.endswith("_s")}
        print(
            f"{args.rows} rows in batches of {batch_rows} ({runs[0][1]['decisions']:.0f} decisions, "
            f"median of {args.repeats} processes): process {wall:.2f} s, import {ms['import_s']:.0f} ms, "
            f"decision at {args.rows} rows {ms['all_rows_s']:.1f} ms, slowest decision {ms['slowest_s']:.1f} ms, "
            f"all decisions {ms['loop_s']:.0f} ms"
        )


if __name__ == "__main__":
    main()
