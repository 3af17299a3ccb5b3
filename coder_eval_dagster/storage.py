"""A faster SQLite event log for the embedded, one-machine Dagster instance.

Dagster's ``SqliteEventLogStorage`` opens a new SQLAlchemy engine, connection
and statement cache for every event it stores (NullPool), and commits with
full fsync. A run that covers N partitions stores about 6 N events, so on
this storage the bookkeeping, not the evaluations, dominates a large run.
This subclass keeps one engine per shard open (a small LRU) and puts the
SQLite files in WAL mode with ``synchronous=NORMAL``: still safe across the
CLI, ``dagster dev`` and the daemon (SQLite locking), durable against a
process crash, much cheaper per event. It also records one "planned" event
per asset for a run over a range of partitions instead of one per
partition (``RangedPlannedEvents``). Selected in ``dagster.yaml``.

A batch of asset events (a step's per-partition materializations) is stored
with one statement per table instead of Dagster's statements per event. That
path re-does what ``SqliteEventLogStorage.store_event`` does with Dagster's
private pieces of it, from this pinned Dagster (1.13.27): ``_event_to_row``,
``_tags_for_asset_event``, ``_store_asset_event`` and the ``event_logs`` and
``asset_event_tags`` tables. tests/dagster/test_event_storage.py fails when its rows
or what Dagster reads back differ from the stock storage storing one event at a time.

Event bodies are stored packed (event_bodies.py: zlib over a preset
dictionary, ~2 KB of JSON to ~0.2 KB); every read goes through the
``event_logs.event`` column object of Dagster's schema, whose type here
unpacks them, and leaves text (what Dagster's own storages wrote) alone.
tests/dagster/test_event_storage.py reads both back through Dagster's APIs.

New databases are copies of pre-migrated empty ones shipped in
``instance_template/`` (made by ``python -m coder_eval_dagster.storage``
from this pinned Dagster, 1.13.27): creating and stamping a schema costs
about a second for a fresh instance and a tenth of one for every run's
shard. tests/dagster/test_instance_template.py fails when the templates no longer
match what this Dagster creates. The run and schedule storages open a
database that carries its schema version without Dagster's check of it
(``check_alembic_revision`` loads all ~90 migration scripts, ~40 ms per
instance opened, only to learn that a version is there); a new or unstamped
one takes Dagster's own path (tests/dagster/test_instance_template.py).
"""

from __future__ import annotations

from importlib.metadata import version

# The Dagster this module's private imports were written against (pyproject.toml pins the same: a test checks).
PINNED_DAGSTER = "1.13.27"
if version("dagster") != PINNED_DAGSTER:
    raise ImportError(
        f"coder_eval_dagster.storage is built on Dagster {PINNED_DAGSTER}'s storage internals, but Dagster "
        f"{version('dagster')} is installed: install dagster=={PINNED_DAGSTER} (as pyproject.toml pins it), or "
        "point dagster.yaml at Dagster's own SQLite or PostgreSQL storages (docs/operations.md)"
    )

import os
import shutil
import sqlite3
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager
from itertools import groupby
from pathlib import Path
from typing import Any, cast

from dagster._core.events import DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.schema import AssetEventTagsTable, SqlEventLogStorageTable
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME, SqliteEventLogStorage
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite import create_db_conn_string
from sqlalchemy import Text, create_engine, event, func, select
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.pool import QueuePool
from sqlalchemy.types import TypeDecorator

from .event_bodies import body_text, packed_body

SQLITE_BUSY_TIMEOUT_S = 30
OPEN_ENGINES = 8
TEMPLATE_DIR = Path(__file__).parent / "instance_template"
# Template name -> where it goes under DAGSTER_HOME (the layout of INSTANCE_YAML).
HOME_DATABASES = {
    "runs.db": "history/runs.db",
    "index.db": "history/runs/index.db",
    "schedules.db": "schedules/schedules.db",
}
RUN_SHARD = "run_shard.db"
# The instance configuration coder-eval writes into a home that has none (launch.write_instance_defaults), and
# the repository's top-level dagster.yaml (a test keeps them equal): the storages below, in that layout.
INSTANCE_YAML = """\
# coder-eval's Dagster instance for the home {base}: the embedded one-machine defaults, written
# into a home without a dagster.yaml on first use (or by `coder-eval instance init HOME`).
# Edit freely; see docs/operations.md (PostgreSQL, run launchers, pools).
run_storage:
  module: coder_eval_dagster.storage
  class: FastSqliteRunStorage
  config: {{base_dir: {base}/history}}
event_log_storage:
  module: coder_eval_dagster.storage
  class: FastSqliteEventLogStorage
  config: {{base_dir: {base}/history/runs}}
schedule_storage:
  module: coder_eval_dagster.storage
  class: FastSqliteScheduleStorage
  config: {{base_dir: {base}/schedules}}
# Steps log through the event log; capturing their stdout would start a `tail` per step.
compute_logs:
  module: dagster._core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
concurrency:
  pools: {{default_limit: 4}}
# The file sensor ticks every 30 s and its cursor holds a fingerprint per row-task: keep a day of the ticks
# that skip (Dagster keeps a week), the rest as Dagster does.
retention:
  sensor:
    purge_after_days: {{skipped: 1}}
telemetry: {{enabled: false}}
"""
# What Dagster hands over in batches (execute_step: a step's per-partition asset events).
BULK_EVENT_TYPES = frozenset({DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.ASSET_OBSERVATION})


class _EventBody(TypeDecorator[str]):
    """The ``event`` column as Dagster's queries read it: a packed body comes back as its text. Leaves text
    alone, so an instance written by Dagster's own storages (or PostgreSQL's) reads as before."""

    impl = Text
    cache_ok = True

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else body_text(value)


# Every read of event bodies goes through this column object (Dagster's queries select it): set before
# any statement is compiled, at this module's import, which the instance's storage configuration causes.
SqlEventLogStorageTable.c.event.type = _EventBody()


def copy_template(name: str, target: Path) -> bool:
    """Put the pre-migrated empty database ``name`` at ``target`` unless a database is already there.

    True when ``target`` now holds the template's copy; linking a finished
    copy into place means a concurrent opener sees either nothing or all of it.
    """
    source = TEMPLATE_DIR / name
    if not source.is_file() or target.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    shutil.copyfile(source, temporary)
    try:
        os.link(temporary, target)
        return True
    except FileExistsError:
        return False
    finally:
        temporary.unlink()


def _stored_in_bulk(event: EventLogEntry) -> bool:
    """An asset event of the kinds Dagster batches (a step's per-partition materializations or observations)."""
    dagster_event = event.dagster_event
    return dagster_event is not None and dagster_event.event_type in BULK_EVENT_TYPES and bool(dagster_event.asset_key)


def _last_of_each_kind(events: list[EventLogEntry], ids: list[int]) -> list[tuple[EventLogEntry, int]]:
    """The last event of each asset and event type, with its id, in the events' order.

    Only these need to write their asset's latest-event row: an event's write
    sets the same columns as every earlier one of the same asset and type, in
    the same transaction, so the earlier writes could never be seen by anyone.
    """
    # (only events stored in bulk come here: each a Dagster event, see _stored_in_bulk)
    last = {(event.get_dagster_event().asset_key, event.dagster_event_type): i for i, event in enumerate(events)}
    return [(events[i], ids[i]) for i in sorted(last.values())]


def _tune(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _stamped(path: Path) -> bool:
    """True when a database already carries its schema version: Dagster's check of it would only re-read
    every migration script (tenths of a second) to do nothing."""
    if not path.is_file():
        return False
    try:
        # Closed here (sqlite3's own `with` only commits: a connection left open, in a cycle the frozen collector
        # never frees, kept runs.db's write-ahead log beside it after every command), and not read-only: a
        # read-only connection closing last cannot fold the log in and remove it (schedules.db's stayed).
        with closing(sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_S)) as connection:
            return connection.execute("SELECT version_num FROM alembic_version").fetchone() is not None
    except sqlite3.Error:
        return False


class _OpensStampedDatabase:
    """Dagster's ``from_local`` for a database not yet stamped; a stamped one is opened as it is."""

    DATABASE: str  # the file's name without ".db"

    @classmethod
    def from_config_value(cls, inst_data: Any, config_value: Any) -> Any:
        return cls.from_local(inst_data=inst_data, **dict(config_value))

    @classmethod
    def from_local(cls, base_dir: str, inst_data: Any = None) -> Any:
        if _stamped(Path(base_dir) / f"{cls.DATABASE}.db"):
            url = create_db_conn_string(base_dir, cls.DATABASE)
            return cls(url, inst_data)  # type: ignore[call-arg]  # a mixin: cls is a Dagster storage class
        return super().from_local(base_dir, inst_data)  # type: ignore[misc]  # and super() that storage


class FastSqliteRunStorage(_OpensStampedDatabase, SqliteRunStorage):
    """``SqliteRunStorage`` opening a stamped database without re-reading the migration scripts."""

    DATABASE = "runs"


class FastSqliteScheduleStorage(_OpensStampedDatabase, SqliteScheduleStorage):
    """``SqliteScheduleStorage`` opening a stamped database without re-reading the migration scripts."""

    DATABASE = "schedules"


class KnownTables:
    """Dagster's schema checks, each answered by the database once it is yes: Dagster asks several times per
    event (a query each on PostgreSQL), and the answer only ever changes from no to yes."""

    def _once_yes(self, name: str, ask: Callable[[], bool]) -> bool:
        """Whether ``name`` exists, asking the database (``ask``) only until it says yes."""
        known: set[str] = self.__dict__.setdefault("_known_tables", set())
        if name not in known and ask():
            known.add(name)
        return name in known

    def has_table(self, table_name: str) -> bool:
        ask = super().has_table  # type: ignore[misc]  # a storage's
        return self._once_yes(table_name, lambda: ask(table_name))

    def _has_asset_key_index_cols_on_connection(self, conn: Connection) -> bool:
        ask = super()._has_asset_key_index_cols_on_connection  # type: ignore[misc]  # a storage's
        return self._once_yes("asset_key_index_cols", lambda: ask(conn))


class RangedPlannedEvents:
    """One planned event per asset for a ranged run, not one per partition (3 N events for N rows).

    Dagster's SQL storages read such events back. Dagster's trade-off: if a
    run crashes, its partitions are not marked failed (they show as not
    materialized). coder-eval records an evaluation's failure in its results,
    never as a failed step, so that state only follows a crash of the run itself.
    """

    @property
    def supports_partition_subset_in_asset_materialization_planned_events(self) -> bool:
        return True


class TagsFromRows:
    """Dagster's ``_store_asset_event_tags`` for a batch whose event rows are built: each event's asset key string
    and timestamp taken from its row. Dagster recomputes both for every tag, and a multi-partition
    materialization has three: 25 us of CPU per event instead of 7."""

    def _store_tags(
        self, conn: Connection, events: list[EventLogEntry], rows: list[dict[str, Any]], ids: list[int]
    ) -> None:
        storage = cast(SqlEventLogStorage, self)
        values = [
            dict(event_id=i, asset_key=row["asset_key"], key=key, value=value, event_timestamp=row["timestamp"])
            for event, row, i in zip(events, rows, ids, strict=True)
            for key, value in storage._tags_for_asset_event(event).items()
        ]
        if values and storage.has_table(AssetEventTagsTable.name):
            conn.execute(AssetEventTagsTable.insert(), values)


class FastSqliteEventLogStorage(KnownTables, RangedPlannedEvents, TagsFromRows, SqliteEventLogStorage):
    """``SqliteEventLogStorage`` with pooled engines and WAL journaling."""

    def __init__(self, base_dir: str, inst_data: Any = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._batch = threading.local()
        copy_template("index.db", Path(base_dir) / f"{INDEX_SHARD_NAME}.db")
        super().__init__(base_dir, inst_data)
        # A batch holds it while store_event re-enters _connect (Dagster's own is a plain Lock).
        self._db_lock = threading.RLock()  # type: ignore[assignment]  # Dagster declares a Lock

    @classmethod
    def from_config_value(cls, inst_data: Any, config_value: Any) -> FastSqliteEventLogStorage:
        return cls(inst_data=inst_data, **dict(config_value))

    def _engine(self, shard: str) -> Engine:
        engine = self._engines.get(shard)
        if engine is None:
            engine = create_engine(
                self.conn_string_for_shard(shard),
                poolclass=QueuePool,
                pool_size=1,
                max_overflow=2,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False},
            )
            event.listen(engine, "connect", _tune)
            self._engines[shard] = engine
            while len(self._engines) > OPEN_ENGINES:
                _, oldest = self._engines.popitem(last=False)
                oldest.dispose()
        self._engines.move_to_end(shard)
        return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        shared = getattr(self._batch, "connections", None)
        if shared is not None and shard in shared:
            yield shared[shard]  # inside store_event_batch: one transaction per shard
            return
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                path = Path(self.path_for_shard(shard))
                if not (copy_template(RUN_SHARD, path) or _stamped(path)):
                    self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def delete_events(self, run_id: str) -> None:
        """Dagster's deletion of a run's events, then its shard's files: SQLite never shrinks a file by deleting
        rows, so a pruned run (``coder-eval prune``) would otherwise leave its whole shard behind."""
        super().delete_events(run_id)
        with self._db_lock:
            engine = self._engines.pop(run_id, None)
            if engine is not None:
                engine.dispose()
            self._initialized_dbs.discard(run_id)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path_for_shard(run_id)}{suffix}").unlink(missing_ok=True)

    def vacuum_index(self) -> None:
        """Give the index shard's free pages back to the file system (after a prune deleted many events)."""
        with self._db_lock:
            engine = self._engines.pop(INDEX_SHARD_NAME, None)
            if engine is not None:
                engine.dispose()
        index = sqlite3.connect(self.path_for_shard(INDEX_SHARD_NAME), timeout=SQLITE_BUSY_TIMEOUT_S)
        with closing(index) as connection:  # closed: the last connection out folds the vacuum's log in
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            connection.execute("VACUUM")

    def _event_to_row(self, event: EventLogEntry) -> dict[str, Any]:
        """Dagster's row for the event, its body packed (both the one-at-a-time path and the bulk one)."""
        row = super()._event_to_row(event)
        row["event"] = packed_body(row["event"])
        return row

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """Store a batch (DAGSTER_EVENT_BATCH_SIZE > 0) in one transaction per shard.

        A run over N partitions hands each asset's N materializations over as
        one batch: consecutive asset events of one run are stored in bulk,
        every other event the stock way, in order. On error everything rolls
        back and Dagster falls back to storing the events one by one.
        """
        shards = list(dict.fromkeys([*(e.run_id for e in events), INDEX_SHARD_NAME]))
        with self._db_lock, ExitStack() as stack:
            self._batch.connections = {shard: stack.enter_context(self._connect(shard)) for shard in shards}
            try:
                for (bulk, _), group in groupby(events, key=lambda e: (_stored_in_bulk(e), e.run_id)):
                    if bulk:
                        self._store_in_bulk(list(group))
                    else:
                        for event in group:
                            self.store_event(event)
            finally:
                self._batch.connections = None

    def _store_in_bulk(self, events: list[EventLogEntry]) -> None:
        """What ``SqliteEventLogStorage.store_event`` does for each asset event, with one statement per table.

        Per event, Dagster builds and compiles an insert for each shard, then
        inserts the event's tags and rewrites its asset's latest-event row.
        Here the rows are built once and inserted with executemany into the
        run shard and the index shard, the tags of all the events go in one
        executemany, and each asset's row is written for its last events only.
        """
        rows = [self._event_to_row(event) for event in events]
        with self.run_connection(events[0].run_id) as conn:
            conn.execute(SqlEventLogStorageTable.insert(), rows)
        with self.index_connection() as conn:
            conn.execute(SqlEventLogStorageTable.insert(), rows)
            # The ids of the rows just inserted, in the events' order. Safe: the
            # insert took SQLite's write lock, which this transaction holds until
            # it ends, so no other connection (thread or process) inserted in
            # between; and event_logs.id is an INTEGER PRIMARY KEY without
            # AUTOINCREMENT, so SQLite gave each row one more than the largest id
            # in the table. Our rows hold the consecutive ids ending at max(id).
            last = conn.execute(select(func.max(SqlEventLogStorageTable.c.id))).scalar_one()
            ids = list(range(last - len(events) + 1, last + 1))
            self._store_tags(conn, events, rows, ids)
            for event, event_id in _last_of_each_kind(events, ids):
                self._store_asset_event(conn, event, event_id)

    def dispose(self) -> None:
        for engine in self._engines.values():
            engine.dispose()
        self._engines.clear()
        super().dispose()


def build_templates(target: Path) -> None:
    """Make the template databases with this Dagster: a fresh instance of our layout, one run shard."""
    import dagster as dg

    global TEMPLATE_DIR
    with tempfile.TemporaryDirectory() as home:
        Path(home, "dagster.yaml").write_text(INSTANCE_YAML.format(base=home), encoding="utf-8")
        saved, TEMPLATE_DIR = TEMPLATE_DIR, Path(home) / "none"  # built from scratch, never from copies
        try:
            with dg.DagsterInstance.from_config(home) as instance:
                storage = cast(FastSqliteEventLogStorage, instance.event_log_storage)  # INSTANCE_YAML names it
                with storage.run_connection("shard"):
                    pass
        finally:
            TEMPLATE_DIR = saved
        target.mkdir(parents=True, exist_ok=True)
        sources = {name: Path(home) / where for name, where in HOME_DATABASES.items()}
        sources[RUN_SHARD] = Path(home) / "history/runs/shard.db"
        for name, source in sources.items():
            with sqlite3.connect(source) as connection:
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            shutil.copyfile(source, target / name)


if __name__ == "__main__":
    build_templates(Path(sys.argv[1]) if len(sys.argv) > 1 else TEMPLATE_DIR)
