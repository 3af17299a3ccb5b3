"""Checks of the run's environment before anything starts: one line each, saying what to fix.

A runs folder that cannot be written, a ``DAGSTER_HOME`` that is a file or a
path too long for the file system would otherwise fail deep inside Dagster,
after the agents ran, with a traceback or a page of logs.
"""

from __future__ import annotations

import errno
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from .files import real_path
from .layout import TABLES_DIR, is_run_folder, partition_folder, run_folder_above

NAME_MAX = 255  # bytes in one path component (ext4, xfs, btrfs, tmpfs)
PATH_MAX = 4096  # bytes in a whole path (Linux)
# What a run adds below the runs folder: run id, variant, task and row ids (up to
# 100 characters each), replicate, sandbox, and the files an agent creates there.
RESERVED_PATH_BYTES = 1024


HOME_FIX = "point DAGSTER_HOME at a writable folder"


def check_environment(runs_dir: Path, dagster_home: Path, junit: Path | None = None) -> list[str]:
    """Every problem with where the run will write (its JUnit file too); empty when it can start."""
    problems = [
        problem
        for problem in (
            path_problem(runs_dir, "--runs-dir"),
            path_problem(dagster_home, "DAGSTER_HOME"),
        )
        if problem
    ]
    if problems:
        return problems
    checks = (
        inside_run_problem(runs_dir, "--runs-dir"),
        folder_problem(runs_dir, "--runs-dir", "give a writable folder with --runs-dir"),
        folder_problem(dagster_home, "DAGSTER_HOME", HOME_FIX),
        tables_problem(runs_dir),
        output_problem(junit, "--junit") if junit is not None else None,
    )
    return [problem for problem in checks if problem]


def path_problem(path: Path, what: str) -> str | None:
    """A path whose length leaves no room for a run's folders below it."""
    full = os.fsencode(path.absolute())
    longest = max((len(part) for part in full.split(b"/")), default=0)
    if longest > NAME_MAX:
        return f"{what} {_short(path)}: a path component is {longest} bytes (at most {NAME_MAX}); use a shorter one"
    if len(full) + RESERVED_PATH_BYTES > PATH_MAX:
        room = PATH_MAX - RESERVED_PATH_BYTES
        return f"{what} {_short(path)}: the path is {len(full)} bytes long; use one of at most {room} bytes"
    return None


def inside_run_problem(folder: Path, what: str) -> str | None:
    """A folder that is a run folder or lies in one (``--runs-dir runs/latest``): what is written there would
    overwrite that run's viewer and be counted in its results."""
    real = real_path(folder)  # through ``latest``
    run = real if is_run_folder(real) else run_folder_above(real)
    if run is None:
        return None
    return f"{what} {_short(folder)} is the run folder {_short(run)} or inside it; give a folder of its own"


def folder_problem(folder: Path, what: str, fix: str) -> str | None:
    """A folder that is not one, or could not be created or written; nothing is left behind.

    Writing is tried, not guessed (root ignores modes, not an immutable flag);
    a missing folder is judged by the nearest folder that exists above it.
    """
    if folder.exists() and not folder.is_dir():
        return f"{what} {_short(folder)} is not a folder; {fix}"
    existing = next(p for p in [folder.absolute(), *folder.absolute().parents] if p.exists())
    try:
        if not existing.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(existing))
        _probe_write(existing)
    except OSError as exc:
        return f"{what} {_short(folder)} cannot be written ({exc.strerror or exc}); {fix}"
    return None


def output_problem(path: Path, what: str) -> str | None:
    """A report file the command will write once its run is over (``--junit FILE``) must be writable before
    the run starts: found after it, the run's verdict would be lost behind a usage error."""
    if path.is_dir():
        return f"{what} {_short(path)} is a folder; give a file path"
    return folder_problem(path.parent, f"{what} {_short(path)}: its folder", "give a file in a writable folder")


def tables_problem(runs_dir: Path) -> str | None:
    """The tables folder, each table's folder and its folder of today's runs must take new files (checked before
    any agent runs)."""
    tables = runs_dir / TABLES_DIR
    if not tables.exists():
        return None
    fix = f"make {_short(tables)} a writable folder, or use another --runs-dir"
    if not tables.is_dir():
        return f"the tables folder {_short(tables)} is not a folder; {fix}"
    table_folders = sorted(p for p in tables.iterdir() if not p.name.startswith("."))
    today = [folder / partition_folder(datetime.now(UTC).date()) for folder in table_folders]
    for folder in [tables, *table_folders, *(p for p in today if p.exists())]:
        try:
            if not folder.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
            _probe_write(folder)
        except OSError as exc:
            return f"the tables folder {_short(folder)} cannot be written ({exc.strerror or exc}); {fix}"
    return None


def _probe_write(folder: Path) -> None:
    fd, name = tempfile.mkstemp(prefix=".coder-eval-probe-", dir=folder)
    os.close(fd)
    os.unlink(name)


def _short(path: Path, limit: int = 120) -> str:
    """A path for a one-line message: long ones keep their start and end."""
    text = str(path)
    return text if len(text) <= limit else f"{text[:60]}…{text[-50:]}"
