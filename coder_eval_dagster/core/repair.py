"""A file's problems in one pass: what its first problems stop is checked on a repaired copy.

Validating a document's fields stops before the rules between fields and
everything checked after them (the template folders and dataset rows a task
names, an experiment's variants): one mistyped key hid them, and a user met a
file's problems one round at a time. The copy renames an unknown key to the
name its did-you-mean suggests (when that name is not written and no other key
of the block suggests it), removes any other unknown key (one moved to
``run_limits`` too: the model reads neither), and reads the file's own id in a
valid spelling when only its spelling is wrong (no rule reads an id's value).
A wrong value is never guessed at. What the checks find in the copy is said
with the first problems, in the file's own spelling; nothing is said at a
repaired place, where the copy holds a guess.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .models.base import MAX_ID_LENGTH, MOVED_TO_RUN_LIMITS, id_problem
from .problems import UNKNOWN_FIELD, Loc, Problem, dotted
from .yamlio import Document

DOCUMENT_IDS = ("task_id", "experiment_id")  # a file's own id: its value names folders, no rule reads it
_SUGGESTED = re.compile(r"\(did you mean `([^`.]+)`\?\)")  # a name of the same block (a dotted one lives elsewhere)
_MOVED = "no longer supported here"  # a run-time cap at its old place
MAX_PASSES = 4  # copies checked for one file: a block's key and a key inside it mistyped take two


@dataclass(frozen=True)
class _Repair:
    """One place of the copy: ``written`` as the file writes it, read as ``read_as`` (None: removed; ``written``
    itself: its value replaced)."""

    written: Loc
    read_as: Loc | None


def hidden_problems(
    doc: Document, said: list[Problem], check: Callable[[Document], list[Problem]], passes: int = MAX_PASSES
) -> list[Problem]:
    """The problems ``check`` finds in a copy of ``doc`` repaired where ``said`` (its problems) stopped the checks,
    beyond ``said``; none when nothing in ``said`` can be repaired. The copy's own unknown keys (in a block a
    repair let the checks into) are repaired in a copy of it, within ``passes``."""
    repairs = _repairs(doc, said)
    if not repairs or not passes or _has_dotted_key(doc.data):  # ("a.b": a field's dotted name would be a guess)
        return []
    repaired = _repaired(doc, repairs)
    found = check(repaired)
    found += hidden_problems(repaired, found, check, passes - 1)
    known = set(said)
    as_written = (_as_written(problem, str(doc.path), repairs) for problem in found)
    return [problem for problem in dict.fromkeys(as_written) if problem is not None and problem not in known]


def _repairs(doc: Document, said: list[Problem]) -> list[_Repair]:
    """Where the copy differs from ``doc``: each unknown key ``said`` names, and the file's id when its spelling is
    what is wrong with it."""
    path = str(doc.path)
    unknown = {
        loc: problem
        for problem in said
        if problem.path == path and (loc := _loc_of(doc.data, problem.field)) is not None and _is_unknown(problem, loc)
    }
    suggested = {loc: name for loc, problem in unknown.items() if (name := _suggestion(problem)) is not None}
    wanted = Counter((loc[:-1], name) for loc, name in suggested.items())
    repairs = [_Repair(loc, _read_as(doc, loc, suggested.get(loc), wanted)) for loc in unknown]
    return repairs + [
        _Repair((key,), (key,))
        for key in DOCUMENT_IDS
        if any(problem.path == path and problem.field == key for problem in said)
        and isinstance(written := doc.data.get(key), str)
        and id_problem(written) is not None
    ]


def _is_unknown(problem: Problem, loc: Loc) -> bool:
    """A key the format does not read at ``loc``: an unknown one, or a cap that moved to ``run_limits``."""
    return problem.message.startswith(UNKNOWN_FIELD) or (loc[-1] in MOVED_TO_RUN_LIMITS and _MOVED in problem.message)


def _read_as(doc: Document, loc: Loc, name: str | None, wanted: Counter[tuple[Loc, str]]) -> Loc | None:
    """The unknown key at ``loc`` read as its suggested ``name`` when the block does not write that name and no other
    unknown key of the block is suggested it (which of them was meant would be a guess); else None: removed."""
    if name is None or wanted[(loc[:-1], name)] > 1 or name in _at(doc.data, loc[:-1]):
        return None
    return (*loc[:-1], name)


def _suggestion(problem: Problem) -> str | None:
    found = _SUGGESTED.search(problem.message)
    return found.group(1) if found else None


def _loc_of(data: Any, field: str) -> Loc | None:
    """The key path of ``doc.data`` that a problem's dotted ``field`` names, ending at a key (None: no such key)."""
    loc: list[str | int] = []
    step: str | int
    for part in field.split("."):
        if isinstance(data, dict):
            key = next((key for key in data if isinstance(key, str) and dotted((key,)) == part), None)
            if key is None:
                return None
            data, step = data[key], key
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data, step = data[int(part)], int(part)
        else:
            return None
        loc.append(step)
    return tuple(loc) if loc and isinstance(loc[-1], str) else None


def _has_dotted_key(data: Any) -> bool:
    """Whether a key anywhere in ``data`` holds a dot, which makes a problem's dotted field name ambiguous."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if any(isinstance(key, str) and "." in key for key in value):
                return True
            stack += value.values()
        elif isinstance(value, list):
            stack += value
    return False


def _at(data: Any, loc: Loc) -> Any:
    """The value at ``loc``, a path known to be there."""
    for step in loc:
        data = data[step]
    return data


def _repaired(doc: Document, repairs: list[_Repair]) -> Document:
    """A copy of ``doc`` with ``repairs`` made; a renamed key's lines are its new name's."""
    data, lines = copy.deepcopy(doc.data), dict(doc.lines)
    for repair in repairs:
        block, key = _at(data, repair.written[:-1]), repair.written[-1]
        if repair.read_as is None:
            del block[key]
        elif repair.read_as == repair.written:
            block[key] = _valid_id(block[key])
        else:
            _rename(block, key, repair.read_as[-1])
            lines |= _lines_below(doc.lines, repair.written, repair.read_as)
    return Document(doc.path, data, lines)


def _rename(block: dict[Any, Any], key: str | int, name: str | int) -> None:
    """``block`` with its ``key`` named ``name``, in place and in the file's order."""
    renamed = {(name if each == key else each): value for each, value in block.items()}
    block.clear()
    block.update(renamed)


def _lines_below(lines: dict[Loc, int], written: Loc, read_as: Loc) -> dict[Loc, int]:
    """The lines of ``written`` and what it holds, as the paths under ``read_as``."""
    size = len(written)
    return {(*read_as, *at[size:]): line for at, line in lines.items() if at[:size] == written}


def _names_the_guess(problem: Problem, repair: _Repair) -> bool:
    """Whether ``problem`` names the key a rename guessed (a key the file does not write)."""
    if repair.read_as is None or repair.read_as == repair.written:
        return False
    return re.search(rf"(?<![\w.]){re.escape(str(repair.read_as[-1]))}(?![\w])", problem.message) is not None


def _valid_id(written: str) -> str:
    """An id standing in for ``written`` in the copy: each character an id may not hold made ``_``, after a ``_``
    (a valid first character that no name the run folder reserves starts with)."""
    return ("_" + re.sub(r"[^A-Za-z0-9_.\-]", "_", written))[:MAX_ID_LENGTH]


def _as_written(problem: Problem, path: str, repairs: list[_Repair]) -> Problem | None:
    """A problem of the copy as the file writes its field (below a renamed key: that key's spelling); None at a
    repaired place, where the copy's value is a guess (or no value of the file's)."""
    if problem.path != path:
        return problem
    for repair in repairs:
        written = dotted(repair.written)
        read_as = dotted(repair.read_as) if repair.read_as is not None else written
        if problem.field in (written, read_as) or problem.field.startswith(written + "."):
            return None
        if _names_the_guess(problem, repair):  # a rule the guessed key broke (``set x or x_file, not both``)
            return None
        if problem.field.startswith(read_as + "."):
            return replace(problem, field=written + problem.field[len(read_as) :])
    return problem
