"""The analysts' tables across releases that added columns and struct fields (core/tables.py).

Files an older release wrote stay in the table folders for years. DuckDB's
documented form reads a folder with the first file's columns and fails on a
later file that lacks one; pandas hides what the first file lacks. The next
write gives every older file the current columns and struct fields, as nulls.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from coder_eval_dagster.core.models.report import TaskRow
from coder_eval_dagster.core.models.results import EvaluationResult, TokenUsage
from coder_eval_dagster.core.tables import (
    JUDGE_USAGE,
    SCHEMAS,
    add_missing_columns,
    arrow_table,
    task_rows,
    write_table,
    write_tables,
)

START = datetime(2026, 11, 1, tzinfo=UTC)
ADDED_LATER = {"cache_read_input_tokens", "cache_creation_input_tokens", "cost_source", "reused", "batch"}
# judge_usage as the first release with judges wrote it
EARLIER_JUDGE_USAGE = pa.struct(
    [
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("duration_s", pa.float64()),
    ]
)
JUDGED = {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.5, "duration_s": 3.0}


def earlier_schema(table: str) -> pa.Schema:
    """The table as an older release wrote it: without the columns added since, judge_usage with 4 fields."""
    fields = [field for field in SCHEMAS[table] if field.name not in ADDED_LATER]
    return pa.schema(
        [pa.field("judge_usage", EARLIER_JUDGE_USAGE) if field.name == "judge_usage" else field for field in fields]
    )


def run(index: int) -> tuple[str, datetime]:
    """The id and start of the run ``index`` days after START."""
    run_ts = START + timedelta(days=index)
    return run_ts.strftime("%Y-%m-%dT%H-%M-%SZ"), run_ts


def row(index: int, **fields: Any) -> dict[str, Any]:
    run_id, run_ts = run(index)
    return {"run_id": run_id, "run_ts": run_ts, "variant_id": "default", "task_id": "t", "base_task_id": "t"} | fields


def write_earlier(tables: Path, table: str, index: int, **fields: Any) -> Path:
    """Run ``index``'s file of ``table`` as an older release wrote it."""
    run_id, run_ts = run(index)
    path = tables / table / f"run_date={run_ts.date()}" / f"{run_id}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(arrow_table([row(index, **fields)], earlier_schema(table)), path)
    return path


def read_all(tables: Path, table: str, select: str = "*") -> list[tuple[Any, ...]]:
    """The table through DuckDB's documented form (no union_by_name), ordered by run."""
    glob = f"{tables}/{table}/**/*.parquet"
    query = f"SELECT {select} FROM read_parquet('{glob}', hive_partitioning = true) ORDER BY run_id"
    with duckdb.connect() as connection:
        return connection.execute(query).fetchall()


def test_rescoring_the_oldest_run_upgrades_every_older_file(tmp_path: Path) -> None:
    earlier = [write_earlier(tmp_path, "task_results", index, final_status="SUCCESS") for index in range(4)]
    before = {path: pq.ParquetFile(path).read() for path in earlier}

    run_id, run_ts = run(0)  # the rescore rewrites the first file the readers see, with today's columns
    write_tables(tmp_path, run_id, run_ts, {"task_results": [row(0, final_status="FAILURE", input_tokens=7)]})

    rows = read_all(tmp_path, "task_results", "run_id, final_status, input_tokens, cache_read_input_tokens")
    assert rows == [(run(0)[0], "FAILURE", 7, None)] + [(run(i)[0], "SUCCESS", None, None) for i in range(1, 4)]
    assert set(SCHEMAS["task_results"].names) <= set(pd.read_parquet(tmp_path / "task_results").columns)
    for path in earlier[1:]:  # rows and earlier columns unchanged
        widened = pq.ParquetFile(path).read()
        assert widened.schema.names == SCHEMAS["task_results"].names
        assert widened.select(before[path].schema.names).equals(before[path])


def test_fields_added_to_a_struct_column_reach_the_older_files(tmp_path: Path) -> None:
    write_earlier(tmp_path, "criteria_scores", 0, criterion_index=0, judge_usage=JUDGED)
    run_id, run_ts = run(1)
    usage = JUDGED | {"cache_read_input_tokens": 5, "retries": 2, "cost_source": "reported"}
    write_table(tmp_path, "criteria_scores", run_id, run_ts, [row(1, criterion_index=0, judge_usage=usage)])

    rows = read_all(tmp_path, "criteria_scores", "judge_usage.input_tokens, judge_usage.retries, judge_usage")
    assert [(tokens, retries) for tokens, retries, _ in rows] == [(100, None), (100, 2)]
    assert list(rows[0][2]) == JUDGE_USAGE.names  # DuckDB's default form shows the whole struct
    (older, newer) = pd.read_parquet(tmp_path / "criteria_scores").sort_values("run_id")["judge_usage"]
    assert older == {name: JUDGED.get(name) for name in JUDGE_USAGE.names}
    assert newer == {name: usage.get(name) for name in JUDGE_USAGE.names}


def test_only_files_lacking_something_are_rewritten_and_a_newer_release_keeps_its_columns(tmp_path: Path) -> None:
    folder = tmp_path / "task_results"
    run_id, run_ts = run(0)
    current = write_table(tmp_path, "task_results", run_id, run_ts, [row(0)])
    newer = folder / f"run_date={run(1)[1].date()}" / "newer.parquet"
    newer.parent.mkdir()
    pq.write_table(arrow_table([row(1)], SCHEMAS["task_results"]).append_column("later", pa.array(["x"])), newer)
    older = write_earlier(tmp_path, "task_results", 2)
    untouched = {path: path.stat().st_mtime_ns for path in (current, newer)}

    assert add_missing_columns(folder, SCHEMAS["task_results"]) == 1
    assert add_missing_columns(folder, SCHEMAS["task_results"]) == 0  # once
    assert {path: path.stat().st_mtime_ns for path in (current, newer)} == untouched
    assert pq.read_schema(older).names == SCHEMAS["task_results"].names
    assert pq.read_schema(newer).names[-1] == "later"


def test_a_pass_reads_only_the_footers_of_files_new_to_the_last_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "task_results"
    for index in range(3):
        write_table(tmp_path, "task_results", *run(index), [row(index)])
    footers: list[str] = []
    read_schema = pq.read_schema
    monkeypatch.setattr(pq, "read_schema", lambda path, *a, **k: footers.append(Path(path).name) or read_schema(path))

    assert add_missing_columns(folder, SCHEMAS["task_results"]) == 0
    assert footers == []  # every file as the last pass (the third write's) left it
    replaced = write_table(tmp_path, "task_results", *run(0), [row(0), row(1)])  # a rescore's, with its pass
    assert footers == [replaced.name]
    footers.clear()
    older = write_earlier(tmp_path, "task_results", 3)  # an earlier release's file, written since
    assert add_missing_columns(folder, SCHEMAS["task_results"]) == 1
    assert footers == [older.name]
    assert pq.read_schema(older).names == SCHEMAS["task_results"].names
    footers.clear()
    widened = SCHEMAS["task_results"].append(pa.field("later", pa.string()))  # the next release's schema
    assert add_missing_columns(folder, widened) == 4 and len(footers) == 4


def test_an_agentless_task_has_the_agent_tokens_of_run_json_null(tmp_path: Path) -> None:
    fields: dict[str, Any] = {"run_id": "r", "task_id": "t", "base_task_id": "t", "variant_id": "default"}
    agentless = EvaluationResult(agent_type="none", replicate=0, **fields)
    agent = EvaluationResult(agent_type="replay", replicate=0, total_token_usage=TokenUsage(output_tokens=3), **fields)
    write_tables(tmp_path, "r", START, {"task_results": task_rows([agentless, agent], START)["task_results"]})

    written = pq.ParquetFile(next((tmp_path / "task_results").glob("*/r.parquet"))).read()
    agents = ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]
    in_run_json = [[getattr(TaskRow.of(result), name) for name in agents] for result in (agentless, agent)]
    assert in_run_json == [[None] * 4, [0, 3, 0, 0]]
    assert [[written.column(name)[i].as_py() for name in agents] for i in (0, 1)] == in_run_json
    assert all(written.schema.field(name).type == pa.int64() for name in agents)


def test_a_damaged_file_in_the_folder_neither_stops_the_write_nor_the_upgrade(tmp_path: Path) -> None:
    older = write_earlier(tmp_path, "task_results", 1)
    damaged = older.parent / "0-damaged.parquet"  # the first file a reader finds
    damaged.write_text("not parquet")
    run_id, run_ts = run(2)

    write_table(tmp_path, "task_results", run_id, run_ts, [row(2)])

    assert pq.read_schema(older).names == SCHEMAS["task_results"].names
    assert damaged.read_text() == "not parquet"


def test_a_killed_writers_hidden_file_goes_when_the_run_is_written_again(tmp_path: Path) -> None:
    """kill -9 during the tables' write left ``.<run>.parquet.<pid>-<thread>.tmp`` for good (the resume's write
    replaced the table file beside it)."""
    import os
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()
    run_id, run_ts = run(0)
    folder = tmp_path / "task_results" / f"run_date={run_ts.date()}"
    folder.mkdir(parents=True)
    stale = folder / f".{run_id}.parquet.{gone.pid}-140127359527808.tmp"
    stale.write_bytes(b"PAR1 cut short")
    live = folder / f".{run_id}.parquet.{os.getpid()}-1.tmp"  # a live writer's (widening the file): its own
    other = folder / f".another-run.parquet.{gone.pid}-1.tmp"  # another run's: not this write's to remove
    for path in (live, other):
        path.write_bytes(b"")
    write_table(tmp_path, "task_results", run_id, run_ts, [row(0)])
    assert sorted(path.name for path in folder.iterdir()) == sorted([f"{run_id}.parquet", live.name, other.name])
