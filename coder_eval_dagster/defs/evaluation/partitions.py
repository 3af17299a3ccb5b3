"""Partitions: two dynamic dimensions, row-task and variant, with UI-safe keys.

Dagster does not validate dynamic keys and its UI breaks on ``|``, ``,`` and
``...``. Keys keep to ``[A-Za-z0-9_-]`` plus a ``.``-escape: ``.`` is written
``.d`` and ``/`` is written ``.s`` (so ``shop/row.1`` becomes ``shop.srow.d1``);
any other character is ``.u`` and six hex digits. The real ids are in the metadata.
"""

from __future__ import annotations

import re

import dagster as dg

TASK_DIMENSION = "task"
VARIANT_DIMENSION = "variant"
task_partitions = dg.DynamicPartitionsDefinition(name=TASK_DIMENSION)
variant_partitions = dg.DynamicPartitionsDefinition(name=VARIANT_DIMENSION)
row_task_partitions = dg.MultiPartitionsDefinition(
    {TASK_DIMENSION: task_partitions, VARIANT_DIMENSION: variant_partitions}
)

_PLAIN = re.compile(r"[A-Za-z0-9_-]")
_ESCAPES = {".": ".d", "/": ".s"}
_UNESCAPES = {"d": ".", "s": "/"}


def encode_id(identifier: str) -> str:
    return "".join(c if _PLAIN.fullmatch(c) else _ESCAPES.get(c, f".u{ord(c):06x}") for c in identifier)


def decode_id(key: str) -> str:
    out, index = [], 0
    while index < len(key):
        char = key[index]
        if char != ".":
            out.append(char)
            index += 1
        elif key[index + 1] == "u":
            out.append(chr(int(key[index + 2 : index + 8], 16)))
            index += 8
        else:
            out.append(_UNESCAPES[key[index + 1]])
            index += 2
    return "".join(out)


def partition_key(task_id: str, variant_id: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({TASK_DIMENSION: encode_id(task_id), VARIANT_DIMENSION: encode_id(variant_id)})


def ids_of(key: str | dg.MultiPartitionKey) -> tuple[str, str]:
    """(task_id, variant_id) of a partition key."""
    if not isinstance(key, dg.MultiPartitionKey):
        key = row_task_partitions.get_partition_key_from_str(key)
    dims = key.keys_by_dimension
    return decode_id(dims[TASK_DIMENSION]), decode_id(dims[VARIANT_DIMENSION])
