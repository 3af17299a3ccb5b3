"""Benchmark: a run of N agentless rows on PostgreSQL, Dagster's own event storage against coder-eval's.

One fresh PostgreSQL server (Debian's binaries); each `coder-eval run` is a
fresh process on a fresh database of it, the two storages alternated:

- ``dagster``: the shorthand ``storage: postgres:`` (Dagster's storages);
- ``coder-eval``: coder_eval_dagster.storage_postgres's three storages, as
  docs/operations.md configures them.

Prints each run's wall time and the run's own time (run.json), then the
medians. On SQLite the same run takes what bench_agentless.py prints.

    python bench/bench_postgres.py [--rows 1000] [--pairs 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.bench_agentless import CHECK, PRE, _cli, _project, _run_seconds
from coder_eval_dagster.storage_postgres import STORAGES_YAML
from tests.support.postgres_server import DAGSTER_STORAGES_YAML, new_database, running_postgres

CONFIGS = {"dagster": DAGSTER_STORAGES_YAML, "coder-eval": STORAGES_YAML}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    seconds: dict[str, list[tuple[float, float]]] = {name: [] for name in CONFIGS}
    with tempfile.TemporaryDirectory() as tmp, running_postgres() as server:
        work = Path(tmp)
        task = _project(work / "rows", "rows", args.rows, PRE, CHECK)
        for pair in range(args.pairs):
            order = list(CONFIGS) if pair % 2 == 0 else list(reversed(CONFIGS))
            for name in order:
                home = work / f"home_{pair}_{name}"
                home.mkdir()
                url = new_database(server, f"run_{pair}_{name.replace('-', '_')}")
                (home / "dagster.yaml").write_text(CONFIGS[name].format(url=url))
                wall, _ = _cli(task, work, args.concurrency, home=home)
                inside = _run_seconds(work / "runs")
                seconds[name].append((wall, inside))
                print(f"{name:10s} pair {pair}: {wall:6.1f} s whole command, {inside:6.1f} s the run", flush=True)
    for name, runs in seconds.items():
        walls, insides = zip(*runs, strict=True)
        print(
            f"{name:10s} median of {len(runs)}: {statistics.median(walls):.1f} s whole command, "
            f"{statistics.median(insides):.1f} s the run ({args.rows} rows, concurrency {args.concurrency})"
        )


if __name__ == "__main__":
    main()
