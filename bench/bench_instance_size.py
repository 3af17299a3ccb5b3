"""Benchmark: bytes the Dagster instance keeps per evaluation (issue 25).

N runs of R agentless rows (bench_agentless.py's task: one pre_run, one
run_command) through `coder-eval run` on one instance, then what the
instance holds, divided by N x R:

- SQLite (the CLI's default home): the files of DAGSTER_HOME as the runs
  left them, and after a WAL checkpoint (no VACUUM); the row payloads by
  table (SQLite's dbstat); the event bodies by event type, in the index
  shard and in the run shards (SQLite keeps an asset event in both).
- PostgreSQL (``--postgres``: coder-eval's PostgreSQL storages on a server from Debian's binaries, as the tests
  start one): pg_total_relation_size of each table (rows, TOAST, indexes),
  and the event bodies by type. Target: <= 8 KB per evaluation on SQLite.

    python bench/bench_instance_size.py [--runs 3] [--rows 1000] [--postgres]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agentless import CHECK, PRE, _cli, _project

KB = 1024
TARGET_KB = 8.0
EVENTS_BY_TYPE = "SELECT dagster_event_type, count(*), sum(length(event)) FROM event_logs GROUP BY 1"


def run_evaluations(task: Path, home: Path, workdir: Path, runs: int) -> None:
    """``runs`` runs of the task through the installed console script, on the instance in ``home`` (their
    run folders under ``workdir/runs``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    for _ in range(runs):
        _cli(task, workdir, 2, home=home)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def checkpoint(home: Path) -> None:
    """Fold each database's WAL into it (what the next writer would do anyway); no VACUUM."""
    for path in home.rglob("*.db"):
        with sqlite3.connect(path) as connection:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def sqlite_payloads(home: Path) -> tuple[Counter[str], Counter[str]]:
    """Bytes of row payload by table or index (dbstat), and event body bytes by "shard event type"."""
    tables: Counter[str] = Counter()
    events: Counter[str] = Counter()
    for path in home.rglob("*.db"):
        shard = "index" if path.name == "index.db" else "run shard" if path.parent.name == "runs" else path.stem
        with sqlite3.connect(path) as connection:
            for name, payload in connection.execute("SELECT name, sum(payload) FROM dbstat GROUP BY name"):
                tables[f"{path.stem if shard == path.stem else shard}: {name}"] += payload or 0
            if shard != path.stem:
                for kind, _, size in connection.execute(EVENTS_BY_TYPE):
                    events[f"{shard}: {kind}"] += size or 0
    return tables, events


def report_sqlite(task: Path, work: Path, runs: int, evaluations: int) -> None:
    home = work / "sqlite_home"  # the CLI gives it coder-eval's defaults on first use
    run_evaluations(task, home, work, runs)
    left = folder_bytes(home)
    checkpoint(home)
    checkpointed = folder_bytes(home)
    tables, events = sqlite_payloads(home)
    print(f"SQLite, {runs} runs x {evaluations // runs} rows: per evaluation")
    print(
        f"  on disk as left {left / evaluations / KB:.1f} KB, "
        f"after a WAL checkpoint {checkpointed / evaluations / KB:.1f} KB"
    )
    print(f"  row payloads {sum(tables.values()) / evaluations / KB:.2f} KB (target <= {TARGET_KB:g} KB on disk)")
    _print_top("  payload by table", tables, evaluations)
    _print_top("  event bodies by type", events, evaluations)


def _print_top(title: str, sizes: Counter[str], evaluations: int) -> None:
    print(title)
    for name, size in sizes.most_common(12):
        if size:
            print(f"    {name:60s} {size / evaluations:8.0f} B")


@contextmanager
def postgres_home(work: Path) -> Iterator[tuple[Path, str]]:
    """A DAGSTER_HOME on coder-eval's PostgreSQL storages, on a fresh server, and the server's URL."""
    from coder_eval_dagster.storage_postgres import STORAGES_YAML
    from tests.support.postgres_server import running_postgres

    with running_postgres() as url:
        home = work / "pg_home"
        home.mkdir()
        (home / "dagster.yaml").write_text(STORAGES_YAML.format(url=url))
        yield home, url


def report_postgres(task: Path, work: Path, runs: int, evaluations: int) -> None:
    import sqlalchemy as sa

    with postgres_home(work) as (home, url):
        run_evaluations(task, home, work / "pg", runs)
        engine = sa.create_engine(url)
        with engine.connect() as connection:
            connection.execute(sa.text("CHECKPOINT"))
            sizes = Counter(
                {
                    name: size
                    for name, size in connection.execute(
                        sa.text(
                            "SELECT relname, pg_total_relation_size(c.oid) FROM pg_class c "
                            "JOIN pg_namespace n ON n.oid = c.relnamespace "
                            "WHERE n.nspname = 'public' AND c.relkind = 'r'"
                        )
                    )
                }
            )
            events = Counter(
                {
                    f"{kind}": size
                    for kind, _, size in connection.execute(
                        sa.text(EVENTS_BY_TYPE.replace("length(event)", "octet_length(event)"))
                    )
                }
            )
        engine.dispose()
    print(f"PostgreSQL, {runs} runs x {evaluations // runs} rows: per evaluation")
    print(f"  tables with their TOAST and indexes {sum(sizes.values()) / evaluations / KB:.1f} KB")
    _print_top("  by table (pg_total_relation_size)", sizes, evaluations)
    _print_top("  event bodies by type", events, evaluations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--postgres", action="store_true", help="measure on PostgreSQL too")
    args = parser.parse_args()
    evaluations = args.runs * args.rows
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        task = _project(work / "task", "size", args.rows, PRE, CHECK)
        report_sqlite(task, work, args.runs, evaluations)
        if args.postgres:
            report_postgres(task, work, args.runs, evaluations)


if __name__ == "__main__":
    main()
