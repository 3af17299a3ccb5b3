"""Event bodies as coder-eval's SQLite event storage stores them: packed, and unpacked again for Dagster's own.

``FastSqliteEventLogStorage`` (storage.py) writes each ``event_logs.event``
as a zlib stream over a preset dictionary of Dagster's own event shapes: a
materialization's ~2 KB of JSON becomes ~0.2 KB (the instance's size per
evaluation: docs/performance.md). Dagster's own SQLite storage reads text only, so an operator who
points dagster.yaml at it (the documented way out when the pinned Dagster
changes) first runs ``coder-eval instance unpack HOME``, which needs no
Dagster: this module imports none.

The dictionary was cut once from a run's events (ids, hashes and paths
blanked) and never changes: a body written with it must stay readable. A new
one would get a new mark, the old kept for reading.
"""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

BODY_MARK = b"\x00z1"
EVENT_DICTIONARY = (Path(__file__).parent / "instance_template" / "event_dictionary.json").read_bytes()
EVENT_DATABASES = "history/runs"  # under a home laid out as storage.INSTANCE_YAML lays it out
BUSY_TIMEOUT_S = 30


def packed_body(body: str) -> bytes:
    # memLevel 9: ~37 us a 2 KB body here, where the default 8 took ~90 (measured; the stream is the same format)
    packer = zlib.compressobj(6, zlib.DEFLATED, 15, 9, zdict=EVENT_DICTIONARY)
    return BODY_MARK + packer.compress(body.encode()) + packer.flush()


def body_text(value: str | bytes) -> str:
    """An event body as Dagster wrote it, whichever way it was stored (text: by Dagster's own storages)."""
    if isinstance(value, str):
        return value
    if value.startswith(BODY_MARK):
        unpacker = zlib.decompressobj(zdict=EVENT_DICTIONARY)
        return (unpacker.decompress(value[len(BODY_MARK) :]) + unpacker.flush()).decode()
    return value.decode()


def unpack_home(home: Path) -> int:
    """Rewrite every packed event body of the home's event databases as text; how many were packed."""
    unpacked = 0
    for database in sorted((home / EVENT_DATABASES).glob("*.db")):
        with sqlite3.connect(database, timeout=BUSY_TIMEOUT_S) as connection:
            connection.create_function("body_text", 1, body_text, deterministic=True)
            unpacked += connection.execute(
                "UPDATE event_logs SET event = body_text(event) WHERE typeof(event) = 'blob'"
            ).rowcount
        connection.close()
    return unpacked
