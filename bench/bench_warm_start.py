"""Benchmark: a one-row `coder-eval run` on a fresh instance vs on one with an earlier run of the task (issue 25).

On an instance that knows an earlier run of the same task set, the end of a
run compares with it (the variant_comparison asset's regression check). That
comparison must not cost the imports of pandas and scipy (about a second)
for two rows. Target: the warm run's median within 1.15x of the fresh one's.

Every run is the installed console script in a process of its own. Fresh and
warm trials alternate, so a change in the machine's load falls on both: a
fresh trial gets a new DAGSTER_HOME and runs folder; the warm trials share one
home and runs folder, seeded with one untimed run (trial i has i earlier runs).
Then one more warm run under PYTHONPROFILEIMPORTTIME lists the heavy modules it
imported (none expected).

    python bench/bench_warm_start.py [--trials 7] [--cli PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASK = """\
task_id: warm_start
description: "one agentless row"
agent: {type: none}
sandbox: {python: null}
success_criteria:
  - type: run_command
    command: "true"
    description: "passes"
"""
HEAVY = ("pandas", "scipy", "matplotlib", "duckdb")
TARGET = 1.15


class Instance:
    """A DAGSTER_HOME and a runs folder under ``root``; ``run`` times one `coder-eval run` of ``task`` on them."""

    def __init__(self, cli: str, task: Path, root: Path):
        self.cli, self.task = cli, task
        self.home, self.runs = root / "dagster_home", root / "runs"
        self.home.mkdir(parents=True)

    def run(self, extra_env: dict[str, str] | None = None) -> tuple[float, str]:
        """Wall seconds of the whole process, and its stderr."""
        env = {**os.environ, "DAGSTER_HOME": str(self.home), **(extra_env or {})}
        command = [self.cli, "run", str(self.task), "--runs-dir", str(self.runs)]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"coder-eval run failed ({done.returncode}):\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}")
        return elapsed, done.stderr


def heavy_imports(stderr: str) -> list[str]:
    """The heavy top-level packages an import log (PYTHONPROFILEIMPORTTIME lines) names."""
    names = {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}
    return sorted({name.split(".")[0] for name in names} & set(HEAVY))


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def describe(name: str, times: list[float]) -> str:
    return f"{name}: median {statistics.median(times):.3f} s, best {min(times):.3f} s, all " + " ".join(
        f"{t:.2f}" for t in times
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=7, help="timed runs of each kind (at least 5)")
    parser.add_argument("--cli", default=str(Path(sys.executable).parent / "coder-eval"), help="the coder-eval to time")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-warm-"))
    try:
        task = workdir / "task.yaml"
        task.write_text(TASK)
        print(f"{args.cli}; load average before: {load()}")
        warm = Instance(args.cli, task, workdir / "warm")
        warm.run()  # the earlier run every warm trial compares with
        fresh_times, warm_times = [], []
        for trial in range(max(5, args.trials)):
            fresh_times.append(Instance(args.cli, task, workdir / f"fresh-{trial}").run()[0])
            warm_times.append(warm.run()[0])
        _, log = warm.run({"PYTHONPROFILEIMPORTTIME": "1"})
        print(describe("fresh instance", fresh_times))
        print(describe("with earlier runs", warm_times))
        ratio = statistics.median(warm_times) / statistics.median(fresh_times)
        print(f"warm / fresh (medians): {ratio:.3f}x; target <= {TARGET}x: {'met' if ratio <= TARGET else 'NOT met'}")
        print(f"heavy packages a warm run imports: {', '.join(heavy_imports(log)) or 'none'}")
        print(f"load average after: {load()}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
