"""The Dagster instance's bytes per evaluation stay bounded (issue 25): what `coder-eval run` stores per row.

Two runs of the installed console script, of 10 and of 60 agentless rows,
each on a fresh SQLite instance: their difference over the 50 extra rows is
what one evaluation costs, without the run's fixed events. Counted as row
payload (the event bodies in every shard, the indexed tag rows, the
dynamic partitions), which does not depend on SQLite's page fill.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import SystemCli

pytestmark = pytest.mark.slow

# Measured 2.3 KB with event bodies packed (12.6 KB as text before, 14.5 KB before the slimmed metadata:
# docs/performance.md, "Instance size per evaluation"); this bound keeps what was cut from coming back.
PAYLOAD_LIMIT = 4 * 1024
PAYLOADS = (
    "SELECT coalesce(sum(length(event)), 0) FROM event_logs",
    "SELECT coalesce(sum(length(asset_key) + length(key) + length(value) + 26), 0) FROM asset_event_tags",
    "SELECT coalesce(sum(length(partitions_def_name) + length(partition) + 26), 0) FROM dynamic_partitions",
)


def _agentless(folder: Path, rows: int) -> Path:
    folder.mkdir(parents=True)
    (folder / "rows.jsonl").write_text("".join(json.dumps({"id": f"r{i:03d}"}) + "\n" for i in range(rows)))
    task = {
        "task_id": "sized",
        "description": "one evaluation's bytes",
        "agent": {"type": "none"},
        "sandbox": {"python": None},
        "dataset": {"paths": ["rows.jsonl"]},
        "pre_run": [{"command": "echo ready > marker.txt"}],
        "success_criteria": [{"type": "run_command", "command": "test -f marker.txt", "description": "marker"}],
    }
    (folder / "task.yaml").write_text(json.dumps(task))
    return folder / "task.yaml"


def _payload(home: Path) -> int:
    """Bytes of row payload the instance's event storage holds (timestamps and ids counted as 26 a row)."""
    total = 0
    for path in (home / "history/runs").glob("*.db"):
        with sqlite3.connect(path) as connection:
            total += sum(connection.execute(query).fetchone()[0] for query in PAYLOADS)
    return total


def _stored_after_run(folder: Path, rows: int) -> int:
    cli = SystemCli(folder)
    outcome, _ = cli.run(_agentless(folder / "task", rows), env={}, timeout=300)
    assert outcome.code == 0, outcome.output
    # the run closed its databases (events, runs, schedules): their write-ahead logs folded in and gone, not left
    # beside them (runs.db's and schedules.db's stayed: a connection opened to read their schema stamp was never
    # closed, and a read-only one closing last cannot remove a log)
    assert not [path.name for path in cli.home.rglob("*.db-*")]
    return _payload(cli.home)


def test_an_evaluation_stores_a_bounded_number_of_bytes_in_the_instance(tmp_path: Path) -> None:
    small, large = _stored_after_run(tmp_path / "small", 10), _stored_after_run(tmp_path / "large", 60)
    per_evaluation = (large - small) / 50
    assert 0 < per_evaluation <= PAYLOAD_LIMIT, f"{per_evaluation / 1024:.1f} KB per evaluation"


# Dagster's own SQLite event storage, in a process of its own (no coder-eval module loaded): the partitions of
# criteria_scores' materializations, or the error reading them.
STOCK_READ = """
import sys
import dagster as dg
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
storage = SqliteEventLogStorage(sys.argv[1])
try:
    records = storage.fetch_materializations(dg.AssetKey("criteria_scores"), limit=10).records
    print(" ".join(sorted(record.partition_key for record in records)))
except Exception as error:
    print("cannot read:", type(error).__name__)
"""


def _read_by_dagster(home: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", STOCK_READ, str(home / "history/runs")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_unpacked_instance_reads_through_dagsters_own_sqlite_storage(tmp_path: Path) -> None:
    """The way out documented for a changed Dagster: `coder-eval instance unpack`, then Dagster's own storage."""
    cli = SystemCli(tmp_path)
    outcome, _ = cli.run(_agentless(tmp_path / "task", 3), env={}, timeout=300)
    assert outcome.code == 0, outcome.output
    assert _read_by_dagster(cli.home).startswith("cannot read:")  # packed
    unpacked = cli("instance", "unpack", cli.home, env={})
    assert unpacked.code == 0 and unpacked.out.startswith("unpacked "), unpacked.output
    assert int(unpacked.out.split()[1]) >= 3 * 3  # three assets' materializations of each row, at least
    assert _read_by_dagster(cli.home) == " ".join(f"sized/r{i:03d}|default" for i in range(3))
    assert cli("instance", "unpack", cli.home, env={}).out.startswith("unpacked 0 event bodies")
