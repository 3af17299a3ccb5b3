"""A copy of a sandbox whose processes may still be changing it (the agent judge's workspace).

A process left running in the sandbox sees the copy start (a file's access
time moves) and can swap a folder it already listed for a link to anywhere on
this machine; a copy by paths would follow that link and read the host as the
harness's user. This copy walks by descriptors, each name opened in its
folder's descriptor without following a link, so what is swapped in meanwhile
is copied as what it is (a link stays a link) and nothing outside is read.
Iterative, not recursive: the agent decides how deep its folders go. Its
size is bounded too: a sparse file costs the agent nothing, and its copy
would be written out whole on this machine's disk.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from .templates import ignored_entry

MAX_DEPTH = 256  # folders deeper than this are left out: a descriptor is held open per level
COPY_CHUNK = 1 << 20
MAX_COPY_BYTES = 1 << 30  # the files' sizes the copy takes in all; a file past what is left is left out
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_SWAPPED = (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.ENXIO)  # gone or changed since it was listed


@dataclass
class LeftOut:
    """What a copy left out, to be said: folders past MAX_DEPTH, files past MAX_COPY_BYTES in all (relative paths)."""

    room: int  # the bytes the copy may still take
    too_deep: list[str] = field(default_factory=list)
    too_large: list[str] = field(default_factory=list)


def copy_live_sandbox(source: Path, target: Path, patterns: list[str]) -> LeftOut:
    """Copy the folder ``source`` to ``target`` (made), leaving out ignored names, devices, FIFOs and sockets, and
    what is past the copy's bounds (said in the LeftOut)."""
    target.mkdir(parents=True, exist_ok=True)
    folders: list[tuple[int, Path, PurePosixPath, list[str]]] = []  # the walk's open folders, deepest last
    left = LeftOut(MAX_COPY_BYTES)
    try:
        _enter(folders, os.open(source, _FOLDER), target, PurePosixPath("."))
        while folders:
            fd, into, base, names = folders[-1]
            if not names:
                os.close(folders.pop()[0])
                continue
            name = names.pop()
            if not ignored_entry(Path(base), name, patterns):
                _copy_entry(folders, fd, name, into / name, base / name, left)
    finally:
        for fd, *_ in folders:
            os.close(fd)
    return left


def _enter(folders: list[tuple[int, Path, PurePosixPath, list[str]]], fd: int, into: Path, base: PurePosixPath) -> None:
    try:
        with os.scandir(fd) as entries:
            names = sorted((entry.name for entry in entries), reverse=True)
    except OSError:
        os.close(fd)
        raise
    folders.append((fd, into, base, names))


def _copy_entry(
    folders: list[tuple[int, Path, PurePosixPath, list[str]]],
    parent: int,
    name: str,
    to: Path,
    relative: PurePosixPath,
    left: LeftOut,
) -> None:
    """One name of an open folder: a link as a link, a folder entered (made in the copy), a regular file copied."""
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(name, dir_fd=parent), to)
        elif stat.S_ISDIR(info.st_mode) and len(folders) > MAX_DEPTH:
            left.too_deep.append(str(relative))
        elif stat.S_ISDIR(info.st_mode):
            child = os.open(name, _FOLDER, dir_fd=parent)
            to.mkdir()
            _enter(folders, child, to, relative)
        elif stat.S_ISREG(info.st_mode):
            _copy_file(os.open(name, _FILE, dir_fd=parent), to, relative, left)
    except OSError as exc:
        if exc.errno not in _SWAPPED:
            raise


def _copy_file(fd: int, to: Path, relative: PurePosixPath, left: LeftOut) -> None:
    """The regular file open at ``fd`` (anything else, swapped in after its look, is left out) to ``to``, unless
    it is larger than the room left; at most the size it had when it was looked at (it may be growing)."""
    with os.fdopen(fd, "rb") as source:
        info = os.fstat(source.fileno())
        if not stat.S_ISREG(info.st_mode):
            return
        if info.st_size > left.room:
            left.too_large.append(str(relative))
            return
        left.room -= info.st_size
        with open(to, "xb") as copy:
            _copy_at_most(source, copy, info.st_size)
    with contextlib.suppress(OSError):
        os.chmod(to, stat.S_IMODE(info.st_mode))
        os.utime(to, ns=(info.st_atime_ns, info.st_mtime_ns))


def _copy_at_most(source: BinaryIO, copy: BinaryIO, size: int) -> None:
    while size > 0:
        chunk = source.read(min(size, COPY_CHUNK))
        if not chunk:
            return
        copy.write(chunk)
        size -= len(chunk)
