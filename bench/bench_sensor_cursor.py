"""Benchmark: the file sensor's cursor and tick time at suite size (issue 25: an instance that stays small).

Dagster stores a sensor's cursor with every tick, skipped ones too (2,880 a day
at the default 30 s). The sensor keeps its fingerprints (one per row-task x
variant) in the instance's key-value store and names them in the cursor; this
prints the cursor's size, the stored entry's, and the time of a first tick and
of an unchanged one, on a temporary instance in this process (Dagster's own
`build_sensor_context`, as the daemon's code server evaluates a tick).

    python bench/bench_sensor_cursor.py [--rows 10000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench_agentless import CHECK, PRE, _project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10000)
    args = parser.parse_args()

    import dagster as dg

    from coder_eval_dagster.definitions import build_definitions
    from coder_eval_dagster.defs.resources import CoderEvalSettings, RunOptionsConfig, RunSpecConfig
    from coder_eval_dagster.defs.sensors import Cursor, FingerprintStore, sensor_identity, task_files_sensor

    with tempfile.TemporaryDirectory() as scratch, dg.instance_for_test() as instance:
        tasks = Path(scratch) / "tasks"
        _project(tasks, "rows", args.rows, PRE, CHECK)  # bench_agentless.py's agentless task
        settings = CoderEvalSettings(
            spec=RunSpecConfig(task_paths=[str(tasks)]), options=RunOptionsConfig(runs_dir=str(Path(scratch) / "runs"))
        )
        definitions = build_definitions(settings)

        def context(cursor: str | None) -> dg.SensorEvaluationContext:
            return dg.build_sensor_context(
                instance=instance, cursor=cursor, resources={"settings": settings}, definitions=definitions
            )

        def tick(cursor: str | None) -> tuple[str, float]:
            start = time.perf_counter()
            data = task_files_sensor.evaluate_tick(context(cursor))
            return data.cursor or "", time.perf_counter() - start

        first, first_s = tick(None)
        unchanged, unchanged_s = tick(first)
        named = Cursor.parse(first)
        store = FingerprintStore(instance, sensor_identity(context(None)))
        entry = store.get(named.digest or "") or {}
        print(
            f"{len(entry)} keys: cursor {len(first)} bytes (unchanged tick: {len(unchanged)}); stored entry "
            f"{len(json.dumps(entry, sort_keys=True))} bytes; first tick {first_s:.2f} s, unchanged tick "
            f"{unchanged_s:.2f} s"
        )


if __name__ == "__main__":
    main()
