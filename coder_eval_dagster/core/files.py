"""Bounded reads of user and agent files: regular files only, never more than a cap.

A path may name a device (``/dev/zero``), a FIFO or a folder, and a file may be
huge; reading any of them whole would hang or exhaust memory. Every file the
harness reads on a user's or an agent's behalf goes through here.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

MiB = 1024 * 1024
MAX_DOCUMENT_BYTES = 8 * MiB  # a task, experiment or trajectory YAML file, a prompt or reference file
MAX_DATASET_BYTES = 64 * MiB  # one dataset JSONL file
CRITERION_READ_CAP = 8 * MiB  # what a criterion reads of one sandbox file (the rest is ignored, and said so)


class UnreadableFile(ValueError):
    """A file that is not a regular file, or is larger than allowed (the message says which)."""


def regular_file_problem(path: Path, limit: int | None = None) -> str | None:
    """Why ``path`` cannot be read as input (None: it can); never opens the file."""
    try:
        info = path.stat()
    except OSError as exc:
        return f"cannot read file: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        return f"not a regular file: {path}"
    if limit is not None and info.st_size > limit:
        return f"file too large: {info.st_size} bytes (the limit is {limit} bytes)"
    return None


def open_regular(path: Path, follow: bool = True) -> int:
    """A descriptor of ``path`` opened for reading when it is a regular file, else UnreadableFile; a FIFO is never
    waited on. ``follow`` False: a link in the last place is refused (OSError ELOOP), not followed (a path already
    resolved, which a process could swap for a link after)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnreadableFile(f"not a regular file: {path}")
    return fd


def _read_regular(path: Path, cap: int, follow: bool = True) -> tuple[bytes, int]:
    """Up to ``cap`` + 1 bytes of a regular file (``open_regular``), and its size."""
    fd = open_regular(path, follow)
    try:
        info = os.fstat(fd)
        chunks, remaining = [], cap + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, MiB))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks), info.st_size
    finally:
        os.close(fd)


def read_input_text(path: Path, limit: int = MAX_DOCUMENT_BYTES) -> str:
    """A whole input file as UTF-8 text; UnreadableFile when it is special or over ``limit``."""
    data, size = _read_regular(path, limit)
    if len(data) > limit:
        raise UnreadableFile(f"file too large: {max(size, len(data))} bytes (the limit is {limit} bytes)")
    return data.decode("utf-8")


def read_text_capped(
    path: Path, cap: int = CRITERION_READ_CAP, name: str | None = None, follow: bool = True
) -> tuple[str, bool]:
    """The first ``cap`` bytes of a regular file as text, and whether the file was longer.

    FileNotFoundError (naming ``name``, the path the user wrote) when there is no
    regular file there, so criteria report a missing file and a device alike.
    """
    shown = name or str(path)
    try:
        data, _ = _read_regular(path, cap, follow)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise FileNotFoundError(f"file not found: {shown}") from None
    except UnreadableFile:
        raise FileNotFoundError(f"not a regular file: {shown}") from None
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise FileNotFoundError(f"not a regular file: {shown} (a link put there after it was resolved)") from None
    truncated = len(data) > cap
    return data[:cap].decode("utf-8", errors="replace"), truncated


def truncation_note(name: str, truncated: bool, cap: int = CRITERION_READ_CAP) -> dict[str, str]:
    """The criterion-details entry saying a file was read only in part (empty when it was read whole)."""
    if not truncated:
        return {}
    return {"truncated": f"{name} is larger than {cap} bytes; only its first {cap} bytes were read"}
