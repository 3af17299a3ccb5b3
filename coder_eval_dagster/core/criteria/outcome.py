"""What a criterion check returns, and the small arithmetic checks share."""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from ..secrets import redact


@dataclass
class Outcome:
    """A check's verdict before weighting: a score in [0, 1] and its evidence."""

    score: float
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    expected_label: str | None = None
    observed_label: str | None = None


def fraction(passed: int, total: int) -> float:
    return passed / total if total else 1.0


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 1.0


def meets(value: float, minimum: float) -> bool:
    """A score or metric passes at or above its minimum, judged on its exact value (rounded, 0.48989795 passed a
    minimum of 0.48989799); a sum's last-bit error (0.7 as 0.6999999999999999) is not a miss."""
    return value >= minimum or math.isclose(value, minimum, rel_tol=1e-12, abs_tol=1e-12)


_V = TypeVar("_V")

REMOVED = "[reference removed]"
# A file or line of the reference this long (stripped) is scrubbed wherever it appears: a judge quoting one line of
# it leaks it; a shorter one ("return x", "}") is anyone's code and is left alone. The whole reference is scrubbed
# from MIN_WHOLE_CHARS: one of "0" or "yaml", replaced in every number and word, protected nothing and rewrote the
# report.
MIN_PIECE_CHARS = 16
MIN_WHOLE_CHARS = 8
# The header ``reference._folder_text`` puts before each file of a folder reference.
FILE_HEADER = re.compile(r"^### [^\n]*$", re.MULTILINE)


@overload
def scrub(value: str, reference: str | None) -> str: ...
@overload
def scrub(value: str | None, reference: str | None) -> str | None: ...
@overload
def scrub(value: dict[str, _V], reference: str | None) -> dict[str, _V]: ...
@overload
def scrub(value: object, reference: str | None) -> object: ...
def scrub(value: object, reference: str | None) -> object:
    """Keep the reference solution (and secrets) out of anything persisted: details, errors, transcripts."""
    return _scrubbed(value, _forms(reference))


def scrub_fields(fields: dict[str, Any], reference: str | None, kept: Collection[str]) -> dict[str, Any]:
    """:func:`scrub` for each field but those ``kept``: what the harness made itself (a hash, a file's name, a model
    id), no text a model or a command wrote; a hash scrubbed is no longer the hash a rescore matches on."""
    return {name: value if name in kept else scrub(value, reference) for name, value in fields.items()}


def _pieces(reference: str | None) -> list[str]:
    """What of the reference is scrubbed, longest first: the whole of it, each file of a folder reference and
    each line, the last two when at least MIN_PIECE_CHARS long (a judge may quote one file, or one line, alone).
    A reference shorter than MIN_WHOLE_CHARS ("0", "yaml") is not scrubbed: it is in any text."""
    whole = (reference or "").strip()
    files = [file.strip() for file in FILE_HEADER.split(whole)]
    lines = [line.strip() for file in files for line in file.splitlines()]
    pieces = {piece for piece in files + lines if len(piece) >= MIN_PIECE_CHARS}
    if len(whole) >= MIN_WHOLE_CHARS:
        pieces.add(whole)
    return sorted(pieces, key=len, reverse=True)


@functools.lru_cache(maxsize=4)  # one reference, scrubbed from each criterion's details and transcript
def _forms(reference: str | None) -> tuple[str, ...]:
    """Each piece as is, and as written inside a JSON string (a raw verdict, a tool call's input)."""
    forms = [form for piece in _pieces(reference) for form in (piece, json.dumps(piece)[1:-1])]
    return tuple(dict.fromkeys(forms))


def _scrubbed(value: object, forms: tuple[str, ...]) -> object:
    if isinstance(value, str):
        text = redact(value)
        for form in forms:
            text = text.replace(form, REMOVED)
        return text
    if isinstance(value, dict):
        return {k: _scrubbed(v, forms) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v, forms) for v in value]
    return value
