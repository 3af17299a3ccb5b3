"""Partitions: two dynamic dimensions, row-task and variant, keyed by the ids themselves.

A key is the task id (``arithmetic_dataset/add-1``) or variant id, as is,
wherever Dagster allows it. Dagster does not validate dynamic keys, but its
UI and selection syntax break on ``|`` (the dimension separator), ``,`` and
``...`` (range syntax); those, ``%`` itself and anything outside printable
ASCII are percent-escaped, visibly (``a|b`` becomes ``a%7Cb``; a third dot in
a row becomes ``%2E``). A multi-partition key reads ``<task>|<variant>``.
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
from collections.abc import Iterable
from typing import NamedTuple

import dagster as dg

TASK_DIMENSION = "task"
VARIANT_DIMENSION = "variant"
task_partitions = dg.DynamicPartitionsDefinition(name=TASK_DIMENSION)
variant_partitions = dg.DynamicPartitionsDefinition(name=VARIANT_DIMENSION)
row_task_partitions = dg.MultiPartitionsDefinition(
    {TASK_DIMENSION: task_partitions, VARIANT_DIMENSION: variant_partitions}
)

_KEPT = re.compile(r"[A-Za-z0-9_./-]")


def encode_id(identifier: str) -> str:
    out: list[str] = []
    for char in identifier:
        escape = not _KEPT.fullmatch(char) or (char == "." and out[-2:] == [".", "."])
        out.append("".join(f"%{byte:02X}" for byte in char.encode()) if escape else char)
    return "".join(out)


def decode_id(key: str) -> str:
    return urllib.parse.unquote(key, errors="strict")


def partition_key(task_id: str, variant_id: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({TASK_DIMENSION: encode_id(task_id), VARIANT_DIMENSION: encode_id(variant_id)})


def ids_of(key: str | dg.MultiPartitionKey) -> tuple[str, str]:
    """(task_id, variant_id) of a partition key."""
    if not isinstance(key, dg.MultiPartitionKey):
        key = row_task_partitions.get_partition_key_from_str(key)
    dims = key.keys_by_dimension
    return decode_id(dims[TASK_DIMENSION]), decode_id(dims[VARIANT_DIMENSION])


def keys_digest(pairs: Iterable[tuple[str, str]]) -> str:
    """(task_id, variant_id) pairs as one short digest, whatever their order."""
    text = "\n".join(sorted(f"{encode_id(task)}|{encode_id(variant)}" for task, variant in pairs))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Rectangle(NamedTuple):
    """Task keys x variant keys, each a contiguous block of its dimension: what one ranged run selects."""

    tasks: list[str]
    variants: list[str]


def segments(keys: Iterable[str], order: list[str]) -> list[list[str]]:
    """``keys`` as blocks of consecutive positions in ``order`` (a dimension's keys, in insertion order)."""
    wanted = set(keys)
    blocks: list[list[str]] = [[]]
    for key in order:
        if key in wanted:
            blocks[-1].append(key)
        elif blocks[-1]:
            blocks.append([])
    return [block for block in blocks if block]


def rectangles(pairs: Iterable[tuple[str, str]], tasks: list[str], variants: list[str]) -> list[Rectangle]:
    """Exactly the (task, variant) ``pairs``, as rectangles over the keys where they are (nothing re-ordered).

    Variants with the same set of tasks share rectangles; each rectangle is a
    block of ``tasks`` x a block of ``variants`` (both in the instance's order).
    """
    tasks_of: dict[str, set[str]] = {}
    for task, variant in pairs:
        tasks_of.setdefault(variant, set()).add(task)
    variants_of: dict[frozenset[str], list[str]] = {}
    for variant in variants:
        if variant in tasks_of:
            variants_of.setdefault(frozenset(tasks_of[variant]), []).append(variant)
    return [
        Rectangle(task_block, variant_block)
        for task_set, group in variants_of.items()
        for variant_block in segments(group, variants)
        for task_block in segments(task_set, tasks)
    ]
