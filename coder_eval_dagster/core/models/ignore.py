"""Ignore-pattern overrides shared by `sandbox` and `agent` blocks."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator


def _clean_pattern(value: str) -> str:
    """A pattern stripped, in its one form (:func:`normal_ignore_pattern`); one naming nothing is refused."""
    stripped = value.strip()
    if not stripped:
        raise ValueError("empty ignore pattern")
    if stripped == "!":
        raise ValueError("bare '!' is not a pattern; write '!<pattern>' to un-ignore a default")
    normal = normal_ignore_pattern(stripped)
    if normal in ("/", "!"):
        raise ValueError(f"{stripped!r} names no file or folder (only the template's root)")
    return normal


def normal_ignore_pattern(pattern: str) -> str:
    """An ignore pattern in the one form the copy matches, read gitignore-style: a trailing ``/`` names a folder
    (dropped: a name matches a file or a folder), a leading ``./`` or ``/`` anchors the pattern to the template's
    root (kept as one ``/``: its path from there, never a name deeper down). A negation removes a default, which is a
    name, so it keeps neither (``!./dist`` removes ``dist``)."""
    negated = pattern.startswith("!")
    body = pattern[1:].strip() if negated else pattern
    unanchored = re.sub(r"^(\.?/)+", "", body)
    relative = unanchored.rstrip("/")
    if negated:
        return f"!{relative}"
    return f"/{relative}" if unanchored != body else relative


IgnorePattern = Annotated[str, AfterValidator(_clean_pattern)]
