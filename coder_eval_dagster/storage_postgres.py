"""Faster PostgreSQL storages: Dagster's own, with pooled connections and ranged planned events.

What a run on Dagster's PostgreSQL storages spent its time on (a 1,000-row
run took ~60 s there against ~10 s on SQLite; docs/performance.md):

- Every storage call opens a new connection (``NullPool``): a one-row run
  opened 206 of them, ~5 ms each. Here each storage keeps one open
  (``pool_size=1``, more while threads overlap), checked before reuse.
- The event storage takes no partition subset in a "planned" event, so a
  run over N partitions of three assets first stored 3 N planned events,
  one at a time. Here one per asset, as ``FastSqliteEventLogStorage`` does
  (``RangedPlannedEvents``; Dagster's SQL reads handle both).
- It asks the server whether a table exists several times per event; here
  a table is remembered once it exists (``KnownTables``).
- A step's batch of materializations went in as one INSERT with a VALUES
  row per event, compiled anew for each batch (~1 s of a 1,000-row run);
  here the rows go by executemany, their ids returned in order, and the tags
  are built from the rows (``TagsFromRows``).

Everything stored is what Dagster's own storages store, so they read it.
Selected in ``dagster.yaml`` (docs/operations.md, "PostgreSQL"). Built on
the pinned Dagster's storages (storage.py checks the version).
"""

from __future__ import annotations

# isort: off
# First: importing storage checks the pinned Dagster, so that another version fails in its one line, not at an
# internal below that moved.
from .storage import KnownTables, RangedPlannedEvents, TagsFromRows

# isort: on
from collections.abc import Mapping, Sequence
from typing import Any

from dagster._core.events import DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster_postgres.event_log import PostgresEventLogStorage
from dagster_postgres.run_storage import PostgresRunStorage
from dagster_postgres.schedule_storage import PostgresScheduleStorage
from dagster_postgres.utils import create_pg_engine, get_token_provider_from_config, pg_url_from_config

# Connections a storage may open beyond its one kept open, while threads use it at once (closed when returned).
POOL_OVERFLOW = 8
# The storages' part of a dagster.yaml selecting them (docs/operations.md shows it), for a ``{url}``.
STORAGES_YAML = "".join(
    f"{kind}_storage:\n  module: {__name__}\n  class: FastPostgres{name}Storage\n"
    '  config: {{postgres_url: "{url}"}}\n'
    for kind, name in (("run", "Run"), ("event_log", "EventLog"), ("schedule", "Schedule"))
)


class PooledConnections:
    """A Dagster PostgreSQL storage that keeps one connection open instead of opening one per call."""

    postgres_url: str
    _token_provider: Any
    _engine: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # creates the tables if needed, on Dagster's unpooled engine
        self._engine.dispose()
        self._engine = create_pg_engine(
            self.postgres_url,
            self._token_provider,
            isolation_level="AUTOCOMMIT",
            pool_size=1,
            max_overflow=POOL_OVERFLOW,
            pool_pre_ping=True,  # a connection the server dropped (a restart, an idle timeout) is replaced
        )

    @classmethod
    def from_config_value(cls, inst_data: Any, config_value: Mapping[str, Any]) -> Any:
        # Dagster's own build their class by name, whatever the class they are called on.
        return cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )


class FastPostgresRunStorage(PooledConnections, PostgresRunStorage):
    """``PostgresRunStorage`` on one kept connection."""


class FastPostgresScheduleStorage(PooledConnections, PostgresScheduleStorage):
    """``PostgresScheduleStorage`` on one kept connection."""


# The batches PostgresEventLogStorage stores in bulk itself: one kind of asset event at a time.
BULK_KINDS = ({DagsterEventType.ASSET_MATERIALIZATION}, {DagsterEventType.ASSET_OBSERVATION})


class FastPostgresEventLogStorage(
    PooledConnections, KnownTables, RangedPlannedEvents, TagsFromRows, PostgresEventLogStorage
):
    """``PostgresEventLogStorage`` on one kept connection, writing one planned event per asset for a ranged run and
    a batch of asset events by executemany."""

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """What ``PostgresEventLogStorage.store_event_batch`` stores for a batch of materializations (or of
        observations): the events, their tags, the asset's row from the last one; any other batch, its way."""
        kept = [event for event in events if not event.get_dagster_event().is_asset_failed_to_materialize]
        if not kept or {event.get_dagster_event().event_type for event in kept} not in BULK_KINDS:
            super().store_event_batch(events)
            return
        rows = [self._event_to_row(event) for event in kept]
        inserted = SqlEventLogStorageTable.insert().returning(  # the new ids in the rows' order
            SqlEventLogStorageTable.c.id, sort_by_parameter_order=True
        )
        with self._connect() as conn:
            ids = [int(row[0]) for row in conn.execute(inserted, rows)]
        with self.index_transaction() as conn:
            self._store_tags(conn, kept, rows, ids)
            self._store_asset_event(conn, kept[-1], ids[-1])
