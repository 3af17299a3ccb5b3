"""The analysts' Parquet tables (CONTRACT.md section 4).

Layout: ``<runs-dir>/tables/<table>/run_date=<YYYY-MM-DD>/<run_id>.parquet``,
one file per table and run: append-only across runs, and re-written whole
when a run is rescored. ``run_date`` is a hive partition (a column when read
with pandas or DuckDB, not stored in the files). Files are written under a
dot-name and renamed, so a reader never sees one half-written.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import io
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from .layout import partition_folder, replacing, write_atomically
from .models.results import EvaluationResult
from .run_lock import process_alive
from .suite import SuiteEntry

VARIANTS_KEY = b"coder_eval.variants"  # a table file's metadata: the run's variant order, as JSON
CHECKED = ".schema-checked.json"  # in each table's folder: the files the last upgrade pass found complete
COMMON = [
    ("run_id", pa.string()),
    ("run_ts", pa.timestamp("ms", tz="UTC")),
    ("variant_id", pa.string()),
    ("task_id", pa.string()),
    ("base_task_id", pa.string()),
    ("row_id", pa.string()),
    ("replicate", pa.int32()),
]

# A judge criterion's spend; null for the other criteria.
JUDGE_USAGE = pa.struct(
    [
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cache_read_input_tokens", pa.int64()),
        ("cache_creation_input_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("cost_source", pa.string()),
        ("duration_s", pa.float64()),
        ("retries", pa.int32()),  # API calls the client repeated (429/529/5xx) before the answer
    ]
)

SCHEMAS: dict[str, pa.Schema] = {
    "task_results": pa.schema(
        [
            *COMMON,
            ("final_status", pa.string()),
            ("success", pa.bool_()),
            ("weighted_score", pa.float64()),
            ("duration_s", pa.float64()),
            ("turns", pa.int32()),
            ("visible_turns", pa.int32()),
            ("input_tokens", pa.int64()),  # the agent's uncached prompt
            ("output_tokens", pa.int64()),
            ("cache_read_input_tokens", pa.int64()),
            ("cache_creation_input_tokens", pa.int64()),
            ("cost_usd", pa.float64()),  # the agent's
            ("cost_source", pa.string()),  # reported, priced or unknown (null: no tokens spent)
            ("judge_input_tokens", pa.int64()),
            ("judge_output_tokens", pa.int64()),
            ("judge_cost_usd", pa.float64()),
            ("simulator_input_tokens", pa.int64()),
            ("simulator_output_tokens", pa.int64()),
            ("simulator_cost_usd", pa.float64()),
            ("total_cost_usd", pa.float64()),  # agent + judges + simulated user
            ("cost_complete", pa.bool_()),
            ("stopped_early", pa.bool_()),
            ("early_stop_reason", pa.string()),
            ("expected_turns", pa.int32()),
            ("within_expected_turns", pa.bool_()),
            ("agent_type", pa.string()),
            ("model", pa.string()),  # the model the agent reported using (else agent.model; null: no agent)
            ("agent_model", pa.string()),  # agent.model as configured (null: the agent's default)
            ("tags", pa.list_(pa.string())),
            ("error", pa.string()),
            ("trace_id", pa.string()),  # the evaluation's OpenTelemetry trace (null when telemetry is off)
            ("batch", pa.int32()),  # a sequential A/B's batch of the row (null outside one)
        ]
    ),
    "criteria_scores": pa.schema(
        [
            *COMMON,
            ("criterion_index", pa.int32()),
            ("criterion_type", pa.string()),
            ("description", pa.string()),
            ("score", pa.float64()),
            ("passed", pa.bool_()),
            ("gating", pa.bool_()),
            ("weight", pa.float64()),
            ("pass_threshold", pa.float64()),
            ("error", pa.string()),
            ("advisory", pa.bool_()),
            ("expected_label", pa.string()),
            ("observed_label", pa.string()),
            ("judge_usage", JUDGE_USAGE),
            ("reused", pa.bool_()),  # a judge verdict reused from an earlier scoring (judge_usage: the original call's)
            ("evaluation_status", pa.string()),  # not_evaluated: a judge that gave no answer (an outage, not a 0)
        ]
    ),
    "commands": pa.schema(
        [
            *COMMON,
            ("turn", pa.int32()),
            ("seq", pa.int32()),
            ("tool", pa.string()),
            ("command", pa.string()),
            ("status", pa.string()),
            ("duration_ms", pa.float64()),
        ]
    ),
    "dialog_turns": pa.schema(
        [
            *COMMON,
            ("turn", pa.int32()),
            ("role", pa.string()),
            ("text", pa.string()),
            ("tokens", pa.int64()),
            ("input_tokens", pa.int64()),
            ("output_tokens", pa.int64()),
        ]
    ),
    "suite_metrics": pa.schema(
        [
            *COMMON,
            ("criterion_index", pa.int32()),
            ("criterion_type", pa.string()),
            ("metric", pa.string()),
            ("value", pa.float64()),
            ("minimum", pa.float64()),
            ("passed", pa.bool_()),
        ]
    ),
}


# Columns not named as the result's attribute: the agent's tokens and cost, the criterion's index and type.
AGENT_USAGE = {
    "input_tokens": "uncached_input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_input_tokens": "cache_read_input_tokens",
    "cache_creation_input_tokens": "cache_creation_input_tokens",
    "cost_usd": "total_cost_usd",
    "cost_source": "cost_source",
}
DIALOG_COLUMNS = {"turn", "role", "text", "tokens", "input_tokens", "output_tokens"}  # a DialogMessage's
NAMED_APART = {*AGENT_USAGE, "criterion_index", "criterion_type", "judge_usage"}


@functools.cache
def _own_columns(table: str) -> tuple[str, ...]:
    """The table's columns that a result attribute of the same name fills (asked for every row: kept)."""
    named_elsewhere = {n for n, _ in COMMON} | NAMED_APART
    return tuple(name for name in SCHEMAS[table].names if name not in named_elsewhere)


def task_result_row(result: EvaluationResult) -> dict[str, Any]:
    """The task_results columns of one evaluation (without the common ones).

    No agent ran, no usage: the agent's tokens are null, as run.json's are, not 0.
    """
    usage = result.total_token_usage
    return {
        **{name: getattr(result, name) for name in _own_columns("task_results")},
        **{column: getattr(usage, field) if usage else None for column, field in AGENT_USAGE.items()},
    }


def _common(result: EvaluationResult, run_ts: datetime) -> dict[str, Any]:
    return {
        "run_id": result.run_id,
        "run_ts": run_ts,
        "variant_id": result.variant_id,
        "task_id": result.task_id,
        "base_task_id": result.base_task_id,
        "row_id": result.row_id,
        "replicate": result.replicate,
    }


def _command_text(parameters: dict[str, Any]) -> str:
    if "command" in parameters:
        return str(parameters["command"])
    return json.dumps(parameters, ensure_ascii=False, sort_keys=True)


def task_rows(results: list[EvaluationResult], run_ts: datetime) -> dict[str, list[dict[str, Any]]]:
    """Rows of task_results, criteria_scores, commands and dialog_turns."""
    tables: dict[str, list[dict[str, Any]]] = {
        "task_results": [],
        "criteria_scores": [],
        "commands": [],
        "dialog_turns": [],
    }
    for result in results:
        common = _common(result, run_ts)
        tables["task_results"].append({**common, **task_result_row(result)})
        for criterion in result.criteria:
            tables["criteria_scores"].append(
                {
                    **common,
                    "criterion_index": criterion.index,
                    "criterion_type": criterion.type,
                    **{name: getattr(criterion, name) for name in _own_columns("criteria_scores")},
                    "judge_usage": criterion.judge_usage,
                }
            )
        for turn in result.trajectory:
            for call in turn.calls:
                tables["commands"].append(
                    {
                        **common,
                        "turn": call.turn,
                        "seq": call.seq,
                        "tool": call.tool,
                        "command": _command_text(call.parameters),
                        "status": call.status,
                        "duration_ms": call.duration_ms,
                    }
                )
        tables["dialog_turns"].extend(
            {**common, **message.model_dump(include=DIALOG_COLUMNS)} for message in result.dialog
        )
    return tables


def suite_rows(run_id: str, run_ts: datetime, entries: list[SuiteEntry]) -> list[dict[str, Any]]:
    rows = []
    for entry in entries:
        minimums = {t.metric: t for t in entry.thresholds}
        unmeasured: dict[str, float | None] = {
            t.metric: None for t in entry.thresholds if t.metric not in entry.metrics
        }
        for metric, value in (entry.metrics | unmeasured).items():  # (a gated metric no row measured: value null)
            threshold = minimums.get(metric)
            rows.append(
                {
                    "run_id": run_id,
                    "run_ts": run_ts,
                    "variant_id": entry.variant_id,
                    "task_id": entry.base_task_id,
                    "base_task_id": entry.base_task_id,
                    "row_id": None,
                    "replicate": None,
                    "criterion_index": entry.criterion_index,
                    "criterion_type": entry.criterion_type,
                    "metric": metric,
                    "value": threshold.value if threshold else value,  # gated: to the decimals it is judged at
                    "minimum": threshold.minimum if threshold else None,
                    "passed": threshold.passed if threshold else None,
                }
            )
    return rows


def write_table(tables_dir: Path, table: str, run_id: str, run_ts: datetime, rows: list[dict[str, Any]]) -> Path:
    """Write (or replace) this run's file of ``table`` atomically."""
    return write_tables(tables_dir, run_id, run_ts, {table: rows})[0]


def write_tables(
    tables_dir: Path,
    run_id: str,
    run_ts: datetime,
    tables: dict[str, list[dict[str, Any]]],
    variants: Sequence[str] = (),
) -> list[Path]:
    """Write (or replace) this run's file of each table, all or none as far as renames go.

    Every file is written under its dot-name first (no reader takes it for
    data) and renamed only when all are: a full disk or a folder that takes no
    file leaves the tables without the run, not with a part of it. Each file
    keeps the run's variant order (the experiment's) in its metadata: a run
    whose folder was pruned is still compared against its first variant.
    """
    targets = []
    metadata = {VARIANTS_KEY: json.dumps(list(variants)).encode()} if variants else None
    with contextlib.ExitStack() as renames:
        for table, rows in tables.items():
            folder = tables_dir / table / partition_folder(run_ts.date())
            folder.mkdir(parents=True, exist_ok=True)
            for stale in folder.glob(f".{glob.escape(run_id)}.parquet.*.tmp"):
                if not _writer_alive(stale):  # a killed writer's; a live one's (widening the file) is its own
                    stale.unlink(missing_ok=True)
            targets.append(folder / f"{run_id}.parquet")
            temporary = renames.enter_context(replacing(targets[-1]))
            pq.write_table(arrow_table(rows, SCHEMAS[table]).replace_schema_metadata(metadata), temporary)
    for table in tables:
        add_missing_columns(tables_dir / table, SCHEMAS[table])
    return targets


def _writer_alive(temporary: Path) -> bool:
    """Whether the process named in a hidden file's name (``.<run>.parquet.<pid>-<thread>.tmp``) still runs."""
    pid = temporary.name.rsplit(".", 2)[-2].partition("-")[0]
    return pid.isdigit() and process_alive(int(pid))


def add_missing_columns(table_dir: Path, schema: pa.Schema) -> int:
    """Give each file of the table the columns and struct fields of ``schema`` it lacks, as nulls; how many were
    rewritten.

    Readers take a folder's columns from one file: pandas from the first it finds (it hides what that file
    lacks), DuckDB's default form from the first too (it fails on a later file that lacks one, a struct's
    field as well). A file that lacks something is rewritten once, atomically, its rows and its other columns
    unchanged. The footers are read only of files the last pass did not see as they are now (``CHECKED``: a
    year of nightly runs is thousands of files, 0.2 ms a footer at each write); a file an earlier release
    wrote or replaced since is new to it, as is every file once the schema changes.
    """
    stamp = table_dir / CHECKED
    fingerprint = hashlib.sha256(str(schema).encode()).hexdigest()[:16]
    seen = _checked_before(stamp, fingerprint)
    checked: dict[str, list[int]] = {}
    rewritten = 0
    for path in sorted(table_dir.glob("*/*.parquet")):
        name, identity = path.relative_to(table_dir).as_posix(), _identity(path)  # taken before the footer is read
        if seen.get(name) != identity and _lacks_some(path, schema):
            _widen(path, schema)
            rewritten += 1
            identity = _identity(path)
        checked[name] = identity
    with contextlib.suppress(OSError):  # only a cache of the check: without it the next write reads every footer
        write_atomically(stamp, json.dumps({"schema": fingerprint, "files": checked}))
    return rewritten


def _identity(path: Path) -> list[int]:
    """What tells a file apart from the one that had its name before (a rewrite, a replacement)."""
    status = path.stat()
    return [status.st_size, status.st_mtime_ns, status.st_ino]


def _checked_before(stamp: Path, fingerprint: str) -> dict[str, list[int]]:
    """The files the last pass found complete under the same schema (none when it was another, or unreadable)."""
    try:
        document = json.loads(stamp.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(document, dict) or document.get("schema") != fingerprint:
        return {}
    files = document.get("files")
    return files if isinstance(files, dict) else {}


def _lacks_some(path: Path, schema: pa.Schema) -> bool:
    """Whether the file at ``path`` lacks a column or struct field of ``schema`` (its footer only).

    A file that is no Parquet (damaged) is left alone: it must not fail every run's write, and readers name it.
    """
    try:
        written = pq.read_schema(path)
    except pa.ArrowInvalid:
        return False
    return not written.equals(schema) and not _covers(pa.struct(written), pa.struct(schema))


def _covers(have: pa.DataType, want: pa.DataType) -> bool:
    """Whether a column of type ``have`` has every field of ``want``, in nested structs too (types not compared:
    no release changed one)."""
    if not (pa.types.is_struct(have) and pa.types.is_struct(want)):
        return True
    fields = {field.name: field.type for field in have}
    return all(field.name in fields and _covers(fields[field.name], field.type) for field in want)


def _widen(path: Path, schema: pa.Schema) -> None:
    """Rewrite the file at ``path`` with ``schema``'s columns and struct fields, nulls where it had none.

    Its own columns and struct fields that ``schema`` lacks (a newer release's) are kept, after the others.
    """
    table = pq.ParquetFile(path).read()
    widened = pa.concat_tables([schema.empty_table(), table], promote_options="default")
    widened = widened.replace_schema_metadata(table.schema.metadata)
    with replacing(path) as temporary:
        pq.write_table(widened, temporary)


def variant_order(path: Path) -> list[str]:
    """The variant order a table file keeps (:func:`write_tables`); empty in files written before it did."""
    metadata = pq.read_schema(path).metadata or {}
    return list(json.loads(metadata.get(VARIANTS_KEY, b"[]")))


JSON_BLOCK_BYTES = 1 << 20  # pyarrow's default block


def arrow_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows to Arrow through the C++ JSON reader.

    ``pa.Table.from_pylist`` converts Python objects with a check that
    imports pandas (half a second of every run's start-up); the JSON reader
    builds the same typed columns without it.
    """
    if not rows:
        return pa.Table.from_batches([], schema=schema)
    lines = [json.dumps(row, default=_json_value) + "\n" for row in rows]  # ASCII: a character is a byte
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    # The reader refuses a row longer than its block (1 MiB by default): an agent's large Write is one.
    blocks = pa_json.ReadOptions(block_size=max(JSON_BLOCK_BYTES, max(map(len, lines))))
    return pa_json.read_json(io.BytesIO("".join(lines).encode()), read_options=blocks, parse_options=options)


def _json_value(value: Any) -> str:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    raise TypeError(f"not a table value: {value!r}")


def duckdb_source(table_folder: Path) -> str:
    """The SQL literal DuckDB's ``read_parquet`` takes for every file of a table: the folder's own `[`, `*`
    and `?` escaped, or a runs folder named `g[1]` matches no file."""
    return sql_literal(f"{glob.escape(table_folder.as_posix())}/**/*.parquet")


def sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
