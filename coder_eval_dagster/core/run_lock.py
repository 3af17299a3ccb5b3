"""The run folder's work lock: one CLI process at a time runs, resumes, retries or rescores a run (and the
waiting lock the others take turns under: ``exclusively``).

A second one on the same folder (``run --resume`` while the run is still
going) worked beside the first, and the folder ended as whichever wrote last.
The lock is a flock held for the command's life: a process that dies, even by
kill -9, releases it, so a dead run's folder is free to resume. The chunk runs
of one backfill share a folder on purpose (``runs.open_once``) and never take it.
"""

from __future__ import annotations

import fcntl
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .layout import WORK_LOCK_FILE


class RunFolderBusy(Exception):
    """Another live process holds the run folder's work lock."""

    def __init__(self, folder: Path, holder: str):
        super().__init__(
            f"{folder} is in use by {holder}, whose run is still going; --resume, --retry-errors and rescore "
            "take a run whose process ended: wait for it, or stop it first"
        )


@contextmanager
def working_on(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s work lock while the block runs; RunFolderBusy, naming the holder, when another process has
    it. The holder writes who it is into the lock file for that message."""
    descriptor = os.open(folder / WORK_LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by commands
    with os.fdopen(descriptor, "r+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunFolderBusy(folder, handle.read().strip() or "another process") from None
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}")
        handle.flush()
        yield


def in_use(folder: Path) -> bool:
    """Whether a live process holds ``folder``'s work lock (its run, resume, retry or rescore is going)."""
    try:
        descriptor = os.open(folder / WORK_LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)  # (releases the shared lock taken to look)
    return False


@contextmanager
def exclusively(lock_file: Path) -> Iterator[None]:
    """Hold ``lock_file``'s lock for the block, waiting for whoever holds it: processes that would change one thing
    at once take turns (a run folder's creation, the instance's partition keys, an install)."""
    with lock_file.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def process_alive(pid: int) -> bool:
    """Whether a process of this machine still runs under ``pid`` (one of another user's counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
