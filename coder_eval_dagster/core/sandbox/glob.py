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


def sandbox_glob(resolve: Resolve, pattern: str) -> list[str]:
    """The sandbox-relative paths (files and folders) that ``pattern`` matches, sorted."""
    try:
        found: list[Found] = [("", resolve("."))]
    except (OSError, ValueError):
        return []
    for part in PurePosixPath(pattern).parts:
        if part == "**":
            found = [below for base in found for below in _folders_below(base)]
        elif any(c in part for c in GLOB_CHARACTERS):
            matches = re.compile(fnmatch.translate(part)).fullmatch
            found = [child for base in found for child in _children(resolve, base, matches)]
        elif part != ".":
            found = [child for base in found for child in _children(resolve, base, part.__eq__)]
        found = list(dict(found).items())
    return sorted(path for path, _ in found if path)


def _children(resolve: Resolve, base: Found, wanted: Callable[[str], object]) -> Iterator[Found]:
    """The entries of ``base`` whose names are ``wanted``; a link is followed as the sandbox sees it."""
    folder, real = base
    try:
        names = os.listdir(real)
    except OSError:  # not a folder, gone
        return
    for name in names:
        if not wanted(name):
            continue
        path, child = _joined(folder, name), real / name
        if child.is_symlink():
            try:
                child = resolve(path)
            except (OSError, ValueError):  # out of the sandbox, a loop of links
                continue
        if child.exists():
            yield path, child


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
