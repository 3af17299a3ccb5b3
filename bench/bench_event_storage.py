"""Benchmark: CPU per stored materialization event in FastSqliteEventLogStorage.

Takes the per-partition materialization events of a real 1,000-row agentless
run (made with bench_agentless.py's task, or read from ``--home``, a
DAGSTER_HOME that ran one) and stores them into a fresh storage the way a run
hands them over: one batch per asset (``DAGSTER_EVENT_BATCH_SIZE`` events at
most). Prints the CPU and wall time per event, median of ``--repeat``.

    python bench/bench_event_storage.py [--home DAGSTER_HOME] [--rows 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from itertools import groupby
from pathlib import Path

from dagster import deserialize_value
from dagster._core.events.log import EventLogEntry

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agentless import CHECK, PRE, _cli, _project
from coder_eval_dagster.storage import FastSqliteEventLogStorage

BATCH_SIZE = 1000  # launch.py's DAGSTER_EVENT_BATCH_SIZE


def _events(home: Path) -> list[EventLogEntry]:
    """The run's per-partition materializations, in stored order."""
    with sqlite3.connect(home / "history/runs/index.db") as connection:
        rows = connection.execute(
            "SELECT event FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION'"
            " AND partition IS NOT NULL ORDER BY id"
        ).fetchall()
    return [deserialize_value(row[0], EventLogEntry) for row in rows]


def _batches(events: list[EventLogEntry]) -> list[list[EventLogEntry]]:
    """One asset's consecutive events, cut at the batch size, as Dagster hands them over."""
    batches = []
    for _, group in groupby(events, key=lambda e: e.dagster_event.asset_key if e.dagster_event else None):
        run = list(group)
        batches += [run[i : i + BATCH_SIZE] for i in range(0, len(run), BATCH_SIZE)]
    return batches


def _store(batches: list[list[EventLogEntry]]) -> tuple[float, float]:
    """CPU and wall seconds to store the batches into a fresh storage."""
    with tempfile.TemporaryDirectory() as base:
        storage = FastSqliteEventLogStorage(base)
        cpu, wall = time.process_time(), time.perf_counter()
        for batch in batches:
            storage.store_event_batch(batch)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        storage.dispose()
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--home", type=Path, help="a DAGSTER_HOME that ran the agentless task")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = args.home
        if home is None:
            work = Path(tmp)
            _cli(_project(work / "task", "overhead", args.rows, PRE, CHECK), work, 2)
            home = next(work.glob("dagster_home-*"))
        events = _events(home)
    batches = _batches(events)
    _store(batches)  # warm-up: imports, first engines
    cpus, walls = zip(*(_store(batches) for _ in range(args.repeat)), strict=True)
    per = 1000 / len(events)
    print(
        f"{len(events)} materialization events in {len(batches)} batches: "
        f"CPU {statistics.median(cpus) * per:.3f} ms/event (min {min(cpus) * per:.3f}), "
        f"wall {statistics.median(walls) * per:.3f} ms/event"
    )


if __name__ == "__main__":
    main()
