"""A glob over a sandbox as its own commands see it: pathlib's patterns, its links followed through the sandbox.

``Path.glob`` follows links on the host, where an absolute link into the
sandbox (``ln -s "$PWD/sub" link``, with ``$PWD`` at ``/sandbox``) points
nowhere, so ``link/*.txt`` matched nothing while ``link/a.txt`` was found; and
Python 3.11's recursive ``**`` recursed once per folder level (a deep tree
was a ``RecursionError``). Here each folder is listed where the sandbox's
``resolve`` puts it, and ``**`` walks with a stack: as pathlib, ``*`` matches
names starting with a dot, matching is case-sensitive, and ``**`` does not
descend into linked folders.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

GLOB_CHARACTERS = "*?["

Resolve = Callable[[str], Path]  # a sandbox-relative path -> where it is on this machine (PermissionError: out)


Found = tuple[str, Path]  # a sandbox-relative path and where it is on this machine


def sandbox_glob(resolve: Resolve, pattern: str) -> list[Found]:
    """The sandbox-relative paths (files and folders) that ``pattern`` matches, sorted, each with where it is."""
    try:
        found: list[Found] = [("", resolve("."))]
    except (OSError, ValueError):
        return []
    for part in PurePosixPath(pattern).parts:
        if part == "**":
            found = [below for base in found for below in _folders_below(base)]
        elif part != ".":
            found = [child for base in found for name in _named(base, part) for child in _child(resolve, base, name)]
        found = list(dict(found).items())
    return sorted((path, real) for path, real in found if path)


def _named(base: Found, part: str) -> list[str]:
    """The names in ``base`` that a pattern's part names: itself when it holds no wildcard (no listing needed),
    never ``..`` (no folder lists it)."""
    if not any(c in part for c in GLOB_CHARACTERS):
        return [part] if part != ".." else []
    matches = re.compile(fnmatch.translate(part)).fullmatch
    try:
        return [name for name in os.listdir(base[1]) if matches(name)]
    except OSError:  # not a folder, gone
        return []


def _child(resolve: Resolve, base: Found, name: str) -> list[Found]:
    """``name`` in ``base``, when it is there; a link is followed as the sandbox sees it (never out of it)."""
    folder, real = base
    path, child = _joined(folder, name), real / name
    try:
        if child.is_symlink():
            child = resolve(path)
        return [(path, child)] if child.exists() else []
    except (OSError, ValueError):  # out of the sandbox, a loop of links, a path past PATH_MAX (not found there)
        return []


def _folders_below(base: Found) -> Iterator[Found]:
    """``base`` and every folder under it, not through linked folders (as pathlib's ``**``), listed with a stack:
    a folder is where its parent's listing says (no link is followed below ``base``)."""
    stack = [base]
    while stack:
        folder, real = stack.pop()
        yield folder, real
        try:
            with os.scandir(real) as entries:
                stack.extend(
                    (_joined(folder, e.name), Path(e.path)) for e in entries if e.is_dir(follow_symlinks=False)
                )
        except OSError:
            continue


def _joined(base: str, name: str) -> str:
    return f"{base}/{name}" if base else name
