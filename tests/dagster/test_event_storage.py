"""FastSqliteEventLogStorage's batches store exactly what Dagster's stock SQLite storage stores one event at a time.

The same events (a run over multi-partitioned assets: planned events, per-partition
materializations, observations, asset checks, step and run events, a second
run re-materializing partitions) go through ``SqliteEventLogStorage.store_event``
one by one and through our ``store_event_batch`` as Dagster hands them over; the
databases must match row by row and Dagster's read APIs must answer the same.
Guards the private internals storage.py's bulk path relies on (dagster 1.13.27).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluation,
    AssetCheckEvaluationPlanned,
)
from dagster._core.definitions.data_version import DATA_VERSION_TAG
from dagster._core.events import (
    AssetMaterializationPlannedData,
    AssetObservationData,
    DagsterEvent,
    DagsterEventType,
    EngineEventData,
    StepMaterializationData,
)
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from coder_eval_dagster.event_bodies import BODY_MARK, body_text
from coder_eval_dagster.storage import BULK_EVENT_TYPES, FastSqliteEventLogStorage

RUN_A, RUN_B = "0a1b2c3d-0000-4000-8000-00000000000a", "0a1b2c3d-0000-4000-8000-00000000000b"
TASKS, SCORES, DEFINITIONS = dg.AssetKey("resolved_tasks"), dg.AssetKey("criteria_scores"), dg.AssetKey("definitions")
KEYS = [TASKS, SCORES, DEFINITIONS]
PARTITIONS = [dg.MultiPartitionKey({"task": f"t{t}", "variant": f"v{v}"}) for t in range(3) for v in range(2)]
# Set by SQLite when a row is inserted (server default), not by the events.
INSERT_TIME_COLUMNS = {"create_timestamp", "migration_completed"}


class Clock:
    """Event timestamps, strictly increasing, with microseconds."""

    def __init__(self) -> None:
        self.now = 1_760_000_000.123456

    def __call__(self) -> float:
        self.now += 0.001013
        return self.now


def _entry(
    clock: Clock, run_id: str, event_type: DagsterEventType, data: object = None, step: str = "step"
) -> EventLogEntry:
    event = DagsterEvent(event_type.value, "__ASSET_JOB", event_specific_data=data, step_key=step)  # type: ignore[arg-type]
    return EventLogEntry(None, "debug", "", run_id, clock(), step, "__ASSET_JOB", event)


def _materialization(clock: Clock, run_id: str, key: dg.AssetKey, partition: dg.MultiPartitionKey | None, version: int):
    tags = {DATA_VERSION_TAG: f"{version:x}", "dagster/code_version": run_id}
    tags |= {
        f"dagster/partition/{dim}": value for dim, value in (partition.keys_by_dimension if partition else {}).items()
    }
    materialization = dg.AssetMaterialization(
        key,
        partition=str(partition) if partition else None,
        tags=tags,
        metadata={"passed": version % 2 == 0, "row": dg.MetadataValue.json({"id": str(partition), "n": version})},
    )
    return _entry(clock, run_id, DagsterEventType.ASSET_MATERIALIZATION, StepMaterializationData(materialization))


def _observation(clock: Clock, run_id: str, key: dg.AssetKey, partition: dg.MultiPartitionKey | None, tagged: bool):
    tags = {DATA_VERSION_TAG: "obs"} if tagged else None
    observation = dg.AssetObservation(key, partition=str(partition) if partition else None, tags=tags)
    return _entry(clock, run_id, DagsterEventType.ASSET_OBSERVATION, AssetObservationData(observation))


def _planned(clock: Clock, run_id: str, key: dg.AssetKey) -> EventLogEntry:
    return _entry(
        clock, run_id, DagsterEventType.ASSET_MATERIALIZATION_PLANNED, AssetMaterializationPlannedData(key, run_id)
    )


def _check(clock: Clock, run_id: str, planned: bool) -> EventLogEntry:
    if planned:
        return _entry(
            clock,
            run_id,
            DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED,
            AssetCheckEvaluationPlanned(asset_key=TASKS, check_name="c"),
        )
    evaluation = AssetCheckEvaluation(asset_key=TASKS, check_name="c", passed=True, metadata={})
    return _entry(clock, run_id, DagsterEventType.ASSET_CHECK_EVALUATION, evaluation)


def _handovers() -> list[list[EventLogEntry]]:
    """The events as Dagster hands them to the storage: a list is a batch, a single event is stored alone."""
    clock = Clock()
    a, b = RUN_A, RUN_B
    return [
        [_entry(clock, a, DagsterEventType.RUN_START)],
        [
            _planned(clock, a, DEFINITIONS),
            _planned(clock, a, TASKS),
            _planned(clock, a, SCORES),
            _check(clock, a, True),
        ],
        [_entry(clock, a, DagsterEventType.STEP_START)],
        [_materialization(clock, a, DEFINITIONS, None, 1)],
        [_materialization(clock, a, TASKS, p, i) for i, p in enumerate(PARTITIONS)],
        [_check(clock, a, False)],
        [  # mixed: what is not a materialization or observation goes the stock way, in order
            _materialization(clock, a, SCORES, PARTITIONS[0], 10),
            _observation(clock, a, SCORES, PARTITIONS[0], True),
            _materialization(clock, a, SCORES, PARTITIONS[1], 11),
            _planned(clock, a, SCORES),
            _entry(clock, a, DagsterEventType.ENGINE_EVENT, EngineEventData(), step="scores"),
            EventLogEntry(None, "info", "a log line", a, clock(), "scores", "__ASSET_JOB", None),
            _materialization(clock, a, SCORES, PARTITIONS[0], 12),
            _observation(clock, a, TASKS, PARTITIONS[2], False),
            _materialization(clock, a, TASKS, PARTITIONS[2], 13),
            _materialization(clock, b, TASKS, PARTITIONS[3], 14),  # another run's shard
            _observation(clock, b, TASKS, PARTITIONS[3], True),
            _materialization(clock, a, SCORES, PARTITIONS[2], 15),
            _observation(clock, a, SCORES, None, False),  # the asset's last event: not a materialization
        ],
        [_entry(clock, a, DagsterEventType.RUN_SUCCESS)],
        [_entry(clock, b, DagsterEventType.RUN_START)],
        [_materialization(clock, b, TASKS, p, 20 + i) for i, p in enumerate(PARTITIONS[::2])],
        [_observation(clock, b, TASKS, p, True) for p in PARTITIONS[:2]],
        [_entry(clock, b, DagsterEventType.RUN_FAILURE)],
    ]


def _stock(base: Path) -> SqliteEventLogStorage:
    storage = SqliteEventLogStorage(str(base))
    for batch in _handovers():
        for event in batch:
            storage.store_event(event)
    return storage


def _ours(base: Path, monkeypatch: pytest.MonkeyPatch) -> FastSqliteEventLogStorage:
    storage = FastSqliteEventLogStorage(str(base))
    one_by_one: list[EventLogEntry] = []
    store_event = storage.store_event
    monkeypatch.setattr(storage, "store_event", lambda event: one_by_one.append(event) or store_event(event))
    for batch in _handovers():
        if len(batch) == 1:  # what Dagster's handle_new_event does
            storage.store_event(batch[0])
            continue
        one_by_one.clear()
        storage.store_event_batch(batch)
        assert one_by_one == [e for e in batch if e.dagster_event_type not in BULK_EVENT_TYPES]  # the rest in bulk
    return storage


def _tables(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows in rowid order, without the columns SQLite fills with the insert time, event bodies
    as text (ours are stored packed)."""
    with sqlite3.connect(path) as connection:
        connection.create_function("body_text", 1, body_text, deterministic=True)
        names = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        tables = {}
        for name in sorted(names):
            columns = [row[1] for row in connection.execute(f'PRAGMA table_info("{name}")')]
            kept = [f'body_text("{c}")' if (name, c) == ("event_logs", "event") else f'"{c}"' for c in columns]
            selected = ", ".join(k for k, c in zip(kept, columns, strict=True) if c not in INSERT_TIME_COLUMNS)
            tables[name] = connection.execute(f'SELECT {selected} FROM "{name}" ORDER BY rowid').fetchall()
    return tables


def test_a_batch_stores_the_same_rows_as_dagster_one_event_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stock(tmp_path / "stock").dispose()
    _ours(tmp_path / "ours", monkeypatch).dispose()
    databases = sorted(p.name for p in (tmp_path / "stock").glob("*.db"))
    assert databases == sorted(["index.db", f"{RUN_A}.db", f"{RUN_B}.db"])
    assert sorted(p.name for p in (tmp_path / "ours").glob("*.db")) == databases
    for name in databases:
        stock, ours = _tables(tmp_path / "stock" / name), _tables(tmp_path / "ours" / name)
        assert stock.keys() == ours.keys()
        for table in stock:
            assert ours[table] == stock[table], f"{name}: {table}"
    assert len(_tables(tmp_path / "ours" / "index.db")["asset_event_tags"]) > 3 * len(PARTITIONS)
    with sqlite3.connect(tmp_path / "ours" / "index.db") as connection:
        packed = [body for (body,) in connection.execute("SELECT event FROM event_logs")]
    with sqlite3.connect(tmp_path / "stock" / "index.db") as connection:
        text = [body for (body,) in connection.execute("SELECT event FROM event_logs")]
    assert all(isinstance(body, bytes) and body.startswith(BODY_MARK) for body in packed)
    assert sum(map(len, packed)) < sum(map(len, text)) / 4  # what the packing is for


def _answers(storage: SqliteEventLogStorage) -> list[object]:
    """What Dagster's read APIs return about the assets and runs."""
    answers: list[object] = [storage.get_logs_for_run(run_id) for run_id in (RUN_A, RUN_B)]
    answers.append(storage.get_latest_materialization_events(KEYS))
    answers.append(storage.get_asset_records(KEYS))
    for key in KEYS:
        answers.append(storage.fetch_materializations(key, limit=100).records)
        answers.append(storage.fetch_materializations(key, limit=3, ascending=True).records)
        answers.append(storage.fetch_observations(key, limit=100).records)
        answers.append(storage.get_materialized_partitions(key))
        answers.append(storage.get_latest_storage_id_by_partition(key, DagsterEventType.ASSET_MATERIALIZATION))
        answers.append(storage.get_event_records(dg.EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION, key)))
        answers.append(storage.get_event_records(dg.EventRecordsFilter(DagsterEventType.ASSET_OBSERVATION, key)))
        answers.append(storage.get_event_tags_for_asset(key, filter_tags={"dagster/partition/variant": "v0"}))
        answers.append(storage.get_event_tags_for_asset(key, filter_tags={"dagster/partition/task": "t1"}))
        partitions = dg.AssetRecordsFilter(key, asset_partitions=[str(PARTITIONS[0]), str(PARTITIONS[2])])
        answers.append(storage.fetch_materializations(partitions, limit=100).records)
    checks = storage.get_asset_check_execution_history(dg.AssetCheckKey(TASKS, "c"), limit=10)
    answers.append([c._replace(create_timestamp=0.0) for c in checks])  # SQLite's insert time, in seconds
    return answers


def test_a_batch_reads_back_the_same_through_dagster_apis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stock, ours = _stock(tmp_path / "stock"), _ours(tmp_path / "ours", monkeypatch)
    try:
        expected, actual = _answers(stock), _answers(ours)
        assert actual == expected
        assert stock.get_materialized_partitions(TASKS) == {str(p) for p in PARTITIONS}
    finally:
        stock.dispose()
        ours.dispose()


def test_an_instance_dagster_wrote_reads_the_same_through_ours(tmp_path: Path) -> None:
    """Event bodies Dagster's own storage wrote (text, not packed) read back as they did."""
    stock = _stock(tmp_path / "stock")
    expected = _answers(stock)
    stock.dispose()
    ours = FastSqliteEventLogStorage(str(tmp_path / "stock"))
    try:
        assert _answers(ours) == expected
    finally:
        ours.dispose()


def test_two_writers_at_once_tag_their_own_rows(tmp_path: Path) -> None:
    """Two storages (two connections, as two processes have) store batches into one index at the same time.

    The bulk path recovers its rows' ids after its insert; every tag and
    every asset's latest-event row must still point at its own event.
    """
    storages = {run_id: FastSqliteEventLogStorage(str(tmp_path)) for run_id in (RUN_A, RUN_B)}
    failures: list[BaseException] = []

    def write(run_id: str, key: dg.AssetKey) -> None:
        clock = Clock()
        try:
            for version in range(10):
                storages[run_id].store_event_batch(
                    [_materialization(clock, run_id, key, p, version) for p in PARTITIONS]
                )
        except BaseException as error:  # reported by the test's thread
            failures.append(error)

    threads = [threading.Thread(target=write, args=args) for args in ((RUN_A, TASKS), (RUN_B, SCORES))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for storage in storages.values():
        storage.dispose()
    assert failures == []
    with sqlite3.connect(tmp_path / "index.db") as connection:
        events = {
            i: dg.deserialize_value(body_text(e), EventLogEntry)
            for i, e in connection.execute("SELECT id, event FROM event_logs")
        }
        tags = connection.execute("SELECT event_id, asset_key, key, value FROM asset_event_tags").fetchall()
        latest = connection.execute("SELECT last_materialization FROM asset_keys").fetchall()
    assert len(events) == 2 * 10 * len(PARTITIONS) and len(tags) == 3 * len(events)
    for event_id, asset_key, key, value in tags:
        materialization = events[event_id].get_dagster_event().step_materialization_data.materialization
        assert (materialization.asset_key.to_string(), materialization.tags[key]) == (asset_key, value)
    for (record,) in latest:
        record = dg.deserialize_value(record, dg.EventLogRecord)
        assert events[record.storage_id] == record.event_log_entry
