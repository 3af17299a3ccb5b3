"""Dataset rows: loading, row ids, stratified sampling and `${row.x}` substitution."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .files import MAX_DATASET_BYTES, UnreadableFile, read_input_text, regular_file_problem
from .models.base import MAX_ID_LENGTH, id_problem
from .models.dataset import Dataset
from .problems import InvalidInput, Problem, not_utf8
from .row_commands import PLACEHOLDER, Shell, Slot, Unsafe, quoted
from .yamlio import MAX_DEPTH, Document

CLI_SAMPLE_SEED = 0  # --sample is always reproducible
COMMAND_KEY = "command"  # pre_run/post_run and replayed Bash calls: a shell command the row's values are quoted in
SHELL_TOOL = "Bash"  # the replayed tool whose ``command`` the shell runs


@dataclass(frozen=True)
class Row:
    row_id: str
    values: dict[str, Any]
    origin: str  # "<file>:<line>" where the row was written, for error messages


def load_rows(dataset: Dataset, doc: Document) -> list[Row]:
    """Read every row, in declared order, and check the id field. Every file and line is checked in one pass: a
    line that is not JSON, or a file that is not there, leaves the other rows checked (each file's problems said in
    line order)."""
    if dataset.rows is not None:
        raw = [(values, f"{doc.path}:{doc.line_of(('dataset', 'rows', i))}") for i, values in enumerate(dataset.rows)]
        problems: list[Problem] = []
    else:
        raw, problems = _read_files(dataset.paths or [], doc)
    rows, unnamed = _with_ids(raw, dataset.id_field)
    if problems or unnamed:
        raise InvalidInput(_in_line_order([*problems, *unnamed]))
    return rows


def _read_files(paths: list[str], doc: Document) -> tuple[list[tuple[dict[str, Any], str]], list[Problem]]:
    """The rows of the dataset's files (relative to the task) and where each was written, and every problem met."""
    raw, problems = [], []
    for index, relative in enumerate(paths):
        path, field = doc.path.parent / relative, f"dataset.paths.{index}"
        message: str | None
        if not path.exists():
            message = f"file not found: {relative} (relative to the task YAML)"
        else:
            message = regular_file_problem(path, MAX_DATASET_BYTES)
        if message:
            problems.append(Problem(str(doc.path), doc.line_of(("dataset", "paths", index)), field, message))
            continue
        rows, unread = _read_jsonl(path, field)
        raw += rows
        problems += unread
    return raw, problems


def _in_line_order(problems: list[Problem]) -> list[Problem]:
    """Each file's problems by line (one without a line, the count of those not listed, last), the files in the
    order they were met."""
    files = list(dict.fromkeys(problem.path for problem in problems))
    return sorted(problems, key=lambda p: (files.index(p.path), p.line is None, p.line or 0))


def _read_jsonl(path: Path, field: str) -> tuple[list[tuple[dict[str, Any], str]], list[Problem]]:
    """Each line's object and where it was written, and every line that is none (the first few shown)."""
    try:
        text = read_input_text(path, MAX_DATASET_BYTES)
    except UnicodeDecodeError as exc:
        return [], [not_utf8(path, field, exc, "cannot read dataset")]
    except (OSError, UnreadableFile) as exc:
        return [], [Problem(str(path), 1, field, f"cannot read dataset: {exc}")]
    rows, problems, first = [], [], 0
    # Lines end at a newline only: splitlines also splits at U+2028 and the like, which JSON strings may hold as
    # they are (json.dumps with ensure_ascii=False), and refused a valid file at the wrong lines.
    for number, line in enumerate(text.removeprefix("\ufeff").split("\n"), start=1):  # (a BOM: as YAML files)
        if line.strip():
            first = first or number
            parsed = _parse_row(line)
            if isinstance(parsed, str):
                problems.append(Problem(str(path), number, field, parsed))
            else:
                rows.append((parsed, f"{path}:{number}"))
    return rows, _capped(problems, first) if problems else []


def _parse_row(line: str) -> dict[str, Any] | str:
    """A line's JSON object, or why it is not one (a value nested too deep would break the run's pickling)."""
    too_deep = f"row refused: it nests deeper than {MAX_DEPTH} levels"
    try:
        values = json.loads(line, object_pairs_hook=_object)
    except json.JSONDecodeError as exc:  # ("Unterminated string starting at": its position, not a dangling "at")
        return f"invalid JSON: {exc.msg} column {exc.colno}" if exc.msg.endswith(" at") else f"invalid JSON: {exc.msg}"
    except ValueError as exc:  # an integer of more digits than Python reads
        return f"row refused: {str(exc).split(';')[0]}"
    except _DuplicateKey as exc:
        return f"the key {exc.args[0]!r} is given twice in one object (which one counts would be a guess)"
    except RecursionError:  # deeper than the parser goes
        return too_deep
    if not isinstance(values, dict):
        return "each line must be a JSON object"
    if _depth(values) > MAX_DEPTH:
        return too_deep
    if "\\u" in line and _holds_lone_surrogate(values):  # only an escape makes one: the line is decoded text
        return "row refused: a string holds a lone surrogate (a \\ud800-\\udfff escape without its pair), not text"
    return values


def _holds_lone_surrogate(values: dict[str, Any]) -> bool:
    """JSON's ``"\\ud800"`` reads as a lone surrogate, which no UTF-8 record of the run (its fingerprint, run.json) can
    hold: refused here, at its row, rather than when the run is under way."""
    try:
        json.dumps(values, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    return False


class _DuplicateKey(Exception):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused with a key given twice (``{"id": "r1", "id": "r2"}`` was silently row r2)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return found


def _depth(value: Any) -> int:
    """Nesting levels, a scalar counting one, as for YAML documents; iterative, so no depth can overflow it."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level <= MAX_DEPTH:  # past the limit the answer is known
            children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
            stack.extend((child, level + 1) for child in children)
    return deepest


MAX_LISTED_PROBLEMS = 5  # per dataset file: a file that is not JSONL would otherwise list every line


def _capped(problems: list[Problem], first_line: int) -> list[Problem]:
    """The first problems of one file and a count of the rest; a hint when its first line is not JSON at all."""
    head = problems[0]
    if head.line == first_line and head.message.startswith("invalid JSON"):
        hint = '; a dataset file is JSON Lines: one JSON object per line, e.g. {"id": "r1", "q": "..."}'
        problems = [Problem(head.path, head.line, head.field, head.message + hint), *problems[1:]]
    if len(problems) <= MAX_LISTED_PROBLEMS:
        return problems
    more = f"... and {len(problems) - MAX_LISTED_PROBLEMS} more line(s) with problems"
    return [*problems[:MAX_LISTED_PROBLEMS], Problem(head.path, None, head.field, more)]


def _with_ids(raw: list[tuple[dict[str, Any], str]], id_field: str) -> tuple[list[Row], list[Problem]]:
    """The rows whose ids are valid and first of their kind, and a problem for each other row."""
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
    return rows, problems


def sample_rows(rows: list[Row], per_stratum: int | None, field: str, seed: int | None) -> list[Row]:
    """Keep up to ``per_stratum`` rows of each stratum, in their original order.

    A stratum is coder_eval's key, ``str(row.get(field, ""))``: rows without the field and rows with ``""`` form
    one stratum (where an activation dataset's negatives collect); null is a stratum of its own (``"None"``), so
    a seed draws the rows coder_eval draws.
    """
    if per_stratum is None:
        return rows
    strata: dict[str, list[int]] = {}
    for index, row in enumerate(rows):
        strata.setdefault(str(row.values.get(field, "")), []).append(index)
    rng = random.Random(seed)
    keep: set[int] = set()
    for indices in strata.values():
        keep.update(indices if len(indices) <= per_stratum else rng.sample(indices, per_stratum))
    return [row for index, row in enumerate(rows) if index in keep]


def split_rows(rows: list[Row], field: str, split: str) -> tuple[list[Row], list[str]]:
    """The rows of one split (``--split``), and the labelled splits present.

    A dataset with no labelled row (the field absent, null or empty) is not
    split: every row stays. Otherwise only the rows labelled ``split`` stay
    (a value that is not text compares as a placeholder writes it, ``True``, as coder_eval's ``str()``).
    """
    labelled = [row for row in rows if row.values.get(field) not in (None, "")]
    if not labelled:
        return rows, []
    labels = sorted({_row_text(row.values[field]) for row in labelled})
    return [row for row in labelled if _row_text(row.values[field]) == split], labels


def _row_text(value: Any) -> str:
    """A row value as a placeholder writes it in text: a scalar as coder_eval writes it (``str``: ``True``,
    ``1.5``; null as nothing), a list or mapping (which coder_eval refuses) as JSON."""
    if value is None:
        return ""
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def substitute(value: Any, row: Row, unknown: set[str], *, typed: bool = False, command: bool = False) -> Any:
    """Replace ``${row.<field>}`` in every string leaf; collect unknown fields.

    A shell command coder_eval does not fill (``command``: a pre_run/post_run
    command; in a mapping, a replayed Bash call's): each value goes in quoted
    for where the shell reads it (bare, in "...", in '...', in ``$(...)`` or
    backticks, in a here-document), so a row's text stays data (``x; rm -rf
    ~`` or ``$(...)`` never runs) and reads as plain substitution would for
    an ordinary value; a value no quoting keeps data there is an InvalidInput
    naming the row. A criterion's strings, a ``run_command``'s command too,
    take the value as written, as coder_eval substitutes them. With
    ``typed``, a string that is exactly one placeholder becomes the row's
    value itself (``1`` stays an integer).
    """
    if isinstance(value, str):
        return _substitute_text(value, row, unknown, typed and not command, command)
    return _substitute_tree(value, row, unknown, typed, runs_command=False)


def null_placeholders(value: Any, row: Row, at: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Where in ``value`` a string is exactly one placeholder naming a null row value: typed substitution leaves
    None there, which a field taking text must get as the text coder_eval writes, ``""``."""
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole and whole.group(1) in row.values and row.values[whole.group(1)] is None:
            yield at
    elif isinstance(value, (dict, list)):
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            yield from null_placeholders(item, row, (*at, key))


def _substitute_tree(value: Any, row: Row, unknown: set[str], typed: bool, runs_command: bool) -> Any:
    """``substitute`` of a mapping or list: a ``command`` is quoted for the shell only in a replayed Bash call
    (``runs_command``: an ATIF call's arguments), not in a criterion (coder_eval's plain substitution) nor in a
    ``cli_called`` flag or a JSON value named so."""
    if isinstance(value, dict):
        shell = runs_command or value.get("tool") == SHELL_TOOL
        atif_bash = value.get("function_name") == SHELL_TOOL  # its command is in its ``arguments``
        return {
            key: substitute(item, row, unknown, typed=typed, command=shell and key == COMMAND_KEY)
            if isinstance(item, str)
            else _substitute_tree(item, row, unknown, typed, runs_command=atif_bash and key == "arguments")
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
    if command:
        return _substitute_command(text, row, unknown)
    parts, at = [], 0
    for match in PLACEHOLDER.finditer(text):
        name = match.group(1)
        parts.append(text[at : match.start()])
        if name in row.values:
            parts.append(_row_text(row.values[name]))
        else:
            unknown.add(name)
            parts.append(match.group(0))
        at = match.end()
    return "".join([*parts, text[at:]])


def _substitute_command(command: str, row: Row, unknown: set[str]) -> str:
    """A shell command with each value quoted for where its placeholder stands (see :class:`Shell`)."""
    first = PLACEHOLDER.search(command)
    if first is None:
        return command
    try:
        shell = Shell(command).scan()
    except RecursionError:
        raise InvalidInput(
            [_unsafe_problem(row, first.group(1), "the command nests too deep to follow", command)]
        ) from None

    def replace(slot: Slot) -> str | None:
        if slot.name not in row.values:
            unknown.add(slot.name)
            return None
        try:
            return quoted(_row_text(row.values[slot.name]), slot)
        except Unsafe as exc:
            raise InvalidInput([_unsafe_problem(row, slot.name, str(exc), command)]) from None

    try:
        shell.check(replace)
    except Unsafe as exc:
        raise InvalidInput([_unsafe_problem(row, exc.name, str(exc), command)]) from None
    return shell.render(0, len(command), replace)


def _unsafe_problem(row: Row, name: str, why: str, command: str) -> Problem:
    """Where the row was written (the value is what cannot be placed), and the command it was refused for."""
    where, _, line = row.origin.rpartition(":")
    shown = command if len(command) <= 80 else command[:77] + "..."
    who = f"row {row.row_id!r}: " if row.row_id else ""  # a replayed trajectory's row comes without its id
    message = f"{who}this value cannot be data where ${{row.{name}}} stands in {shown!r}: {why}"
    return Problem(where or "dataset row", int(line) if line.isdigit() else None, name, message)
