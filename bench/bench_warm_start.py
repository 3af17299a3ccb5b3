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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agentless import children_cpu

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


@dataclass(frozen=True)
class Timed:
    """One whole `coder-eval run`: wall seconds, CPU seconds (user + system: less moved by the load), stderr."""

    wall: float
    cpu: float
    stderr: str


class Instance:
    """A DAGSTER_HOME and a runs folder under ``root``; ``run`` times one `coder-eval run` of ``task`` on them."""

    def __init__(self, cli: str, task: Path, root: Path):
        self.cli, self.task = cli, task
        self.home, self.runs = root / "dagster_home", root / "runs"
        self.home.mkdir(parents=True)

    def run(self, extra_env: dict[str, str] | None = None) -> Timed:
        """One run, timed as a whole process."""
        env = {**os.environ, "DAGSTER_HOME": str(self.home), **(extra_env or {})}
        command = [self.cli, "run", str(self.task), "--runs-dir", str(self.runs)]
        cpu_before, start = children_cpu(), time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        elapsed, cpu = time.perf_counter() - start, children_cpu() - cpu_before
        if done.returncode != 0:
            sys.exit(f"coder-eval run failed ({done.returncode}):\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}")
        return Timed(elapsed, cpu, done.stderr)


def heavy_imports(stderr: str) -> list[str]:
    """The heavy top-level packages an import log (PYTHONPROFILEIMPORTTIME lines) names."""
    names = {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}
    return sorted({name.split(".")[0] for name in names} & set(HEAVY))


def load() -> str:
    """The load average, printed beside the figures: on this shared 2-core machine it moves them."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def describe(name: str, runs: list[Timed]) -> str:
    walls, cpus = [run.wall for run in runs], [run.cpu for run in runs]
    return (
        f"{name}: wall median {statistics.median(walls):.3f} s, best {min(walls):.3f} s "
        f"(all {' '.join(f'{t:.2f}' for t in walls)}); CPU median {statistics.median(cpus):.3f} s"
    )


def median_ratio(warm: list[Timed], fresh: list[Timed], measure: Callable[[Timed], float]) -> float:
    return statistics.median(map(measure, warm)) / statistics.median(map(measure, fresh))


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
        fresh, warm_runs = [], []
        for trial in range(max(5, args.trials)):
            fresh.append(Instance(args.cli, task, workdir / f"fresh-{trial}").run())
            warm_runs.append(warm.run())
        log = warm.run({"PYTHONPROFILEIMPORTTIME": "1"}).stderr
        print(describe("fresh instance", fresh))
        print(describe("with earlier runs", warm_runs))
        ratio = median_ratio(warm_runs, fresh, lambda run: run.wall)
        verdict = "met" if ratio <= TARGET else "NOT met"
        print(f"warm / fresh, wall medians: {ratio:.3f}x (target <= {TARGET}x: {verdict}); CPU medians: ", end="")
        print(f"{median_ratio(warm_runs, fresh, lambda run: run.cpu):.3f}x")
        print(f"heavy packages a warm run imports: {', '.join(heavy_imports(log)) or 'none'}")
        print(f"load average after: {load()}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
