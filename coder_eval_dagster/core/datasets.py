"""Dataset rows: loading, row ids, stratified sampling and `${row.x}` substitution."""

from __future__ import annotations

import copy
import json
import random
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .files import MAX_DATASET_BYTES, UnreadableFile, read_input_text, regular_file_problem
from .models.base import MAX_ID_LENGTH, id_problem
from .models.dataset import Dataset
from .problems import InvalidInput, Problem
from .yamlio import Document

PLACEHOLDER = re.compile(r"\$\{row\.([^}]+)\}")
CLI_SAMPLE_SEED = 0  # --sample is always reproducible
COMMAND_KEY = "command"  # pre_run/post_run, run_command criteria and replayed Bash calls: a shell command


@dataclass(frozen=True)
class Row:
    row_id: str
    values: dict[str, Any]
    origin: str  # "<file>:<line>" where the row was written, for error messages


def load_rows(dataset: Dataset, doc: Document) -> list[Row]:
    """Read every row, in declared order, and check the id field."""
    if dataset.rows is not None:
        raw = [(values, f"{doc.path}:{doc.line_of(('dataset', 'rows', i))}") for i, values in enumerate(dataset.rows)]
    else:
        raw = []
        for index, relative in enumerate(dataset.paths or []):
            path, field = doc.path.parent / relative, f"dataset.paths.{index}"
            message: str | None
            if not path.exists():
                message = f"file not found: {relative} (relative to the task YAML)"
            else:
                message = regular_file_problem(path, MAX_DATASET_BYTES)
            if message:
                raise InvalidInput([Problem(str(doc.path), doc.line_of(("dataset", "paths", index)), field, message)])
            raw.extend(_read_jsonl(path, field))
    return _with_ids(raw, dataset.id_field, doc)


def _read_jsonl(path: Path, field: str) -> list[tuple[dict[str, Any], str]]:
    try:
        text = read_input_text(path, MAX_DATASET_BYTES)
    except (OSError, UnicodeDecodeError, UnreadableFile) as exc:
        raise InvalidInput([Problem(str(path), 1, field, f"cannot read dataset: {exc}")]) from None
    rows, problems = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(str(path), number, field, f"invalid JSON: {exc.msg}"))
            continue
        if not isinstance(values, dict):
            problems.append(Problem(str(path), number, field, "each line must be a JSON object"))
            continue
        rows.append((values, f"{path}:{number}"))
    if problems:
        raise InvalidInput(problems)
    return rows


def _with_ids(raw: list[tuple[dict[str, Any], str]], id_field: str, doc: Document) -> list[Row]:
    rows: list[Row] = []
    problems: list[Problem] = []
    seen: dict[str, str] = {}  # row id -> where it first appears
    for values, origin in raw:
        where, _, line = origin.rpartition(":")
        row_id = values.get(id_field)
        if row_id is None or isinstance(row_id, (dict, list)):
            problems.append(Problem(where, int(line), "dataset.id_field", f"row has no {id_field!r} value"))
            continue
        row_id = str(row_id)
        why = id_problem(row_id)
        if why:
            problems.append(Problem(where, int(line), "dataset.id_field", f"row id {row_id[:MAX_ID_LENGTH]!r} {why}"))
        elif row_id in seen:
            problems.append(
                Problem(where, int(line), "dataset.id_field", f"duplicate row id {row_id!r} (first at {seen[row_id]})")
            )
        else:
            seen[row_id] = origin
            rows.append(Row(row_id, values, origin))
    if problems:
        raise InvalidInput(problems)
    return rows


def sample_rows(rows: list[Row], per_stratum: int | None, field: str, seed: int | None) -> list[Row]:
    """Keep up to ``per_stratum`` rows of each stratum, in their original order."""
    if per_stratum is None:
        return rows
    strata: dict[str, list[int]] = {}
    for index, row in enumerate(rows):
        strata.setdefault(json.dumps(row.values.get(field), sort_keys=True), []).append(index)
    rng = random.Random(seed)
    keep: set[int] = set()
    for indices in strata.values():
        keep.update(indices if len(indices) <= per_stratum else rng.sample(indices, per_stratum))
    return [row for index, row in enumerate(rows) if index in keep]


def split_rows(rows: list[Row], field: str, split: str) -> tuple[list[Row], list[str]]:
    """The rows of one split (``--split``), and the labelled splits present.

    A dataset with no labelled row (the field absent, null or empty) is not
    split: every row stays. Otherwise only the rows labelled ``split`` stay
    (a value that is not text compares as its text).
    """
    labelled = [row for row in rows if row.values.get(field) not in (None, "")]
    if not labelled:
        return rows, []
    labels = sorted({_as_text(row.values[field]) for row in labelled})
    return [row for row in labelled if _as_text(row.values[field]) == split], labels


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value) if isinstance(value, (dict, list, bool)) or value is None else str(value)


def _row_text(value: Any) -> str:
    """A row value as a placeholder writes it in text: a scalar as coder_eval writes it (``str``: ``True``,
    ``1.5``; null as nothing), a list or mapping (which coder_eval refuses) as JSON."""
    if value is None:
        return ""
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def substitute(value: Any, row: Row, unknown: set[str], *, typed: bool = False, command: bool = False) -> Any:
    """Replace ``${row.<field>}`` in every string leaf; collect unknown fields.

    A string under a ``command`` key is a shell command: each value goes in
    quoted for where it stands (bare, in "...", in '...'), so a row's text
    stays data (``x; rm -rf ~`` or ``$(...)`` never runs) and reads as
    coder_eval's plain substitution would for an ordinary value. With
    ``typed``, a string that is exactly one placeholder becomes the row's
    value itself (``1`` stays an integer).
    """
    if isinstance(value, str):
        return _substitute_text(value, row, unknown, typed and not command, command)
    if isinstance(value, dict):
        return {
            key: substitute(item, row, unknown, typed=typed, command=key == COMMAND_KEY and isinstance(item, str))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [substitute(item, row, unknown, typed=typed) for item in value]
    return value


def _substitute_text(text: str, row: Row, unknown: set[str], typed: bool, command: bool) -> Any:
    if "${row." not in text:
        return text
    whole = PLACEHOLDER.fullmatch(text) if typed else None
    if whole and whole.group(1) in row.values:
        return copy.deepcopy(row.values[whole.group(1)])
    parts, at = [], 0
    for match, quote in _placeholders(text) if command else ((m, None) for m in PLACEHOLDER.finditer(text)):
        name = match.group(1)
        parts.append(text[at : match.start()])
        if name in row.values:
            value = _row_text(row.values[name])
            parts.append(_shell_data(value, quote) if command else value)
        else:
            unknown.add(name)
            parts.append(match.group(0))
        at = match.end()
    return "".join([*parts, text[at:]])


def _placeholders(command: str) -> Iterator[tuple[re.Match[str], str | None]]:
    """Each ``${row.x}`` of a shell command with the quote it stands in: ``'``, ``"``, or None (bare)."""
    quote: str | None = None
    index = 0
    while index < len(command):
        char = command[index]
        if char == "\\" and quote != "'":
            index += 2
            continue
        if char in "'\"" and quote in (None, char):
            quote = None if quote == char else char
        elif match := PLACEHOLDER.match(command, index):
            yield match, quote
            index = match.end()
            continue
        index += 1


def _shell_data(value: str, quote: str | None) -> str:
    """``value`` as data where it stands in a command: one quoted word bare, else escaped for its quotes."""
    if quote == "'":
        return value.replace("'", "'\\''")
    if quote == '"':
        return re.sub(r'([\\"$`])', r"\\\1", value)
    return shlex.quote(value)
