"""Retention: which run folders are past their keep, and removing them without breaking what reads the rest.

The Parquet tables are the history analysts query (``coder-eval history``):
pruning never touches them. The runs index is written again, so it links
only to folders that are still there, and the ``latest`` link is kept.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .compare.index import write_index
from .layout import LATEST_LINK, OPEN_LOCK_FILE, PLAN_FILE, is_run_folder, read_record
from .runs import TIMESTAMP, RunPlan, started
from .trees import remove_tree, walk


@dataclass
class Pruned:
    folders: list[Path]
    bytes_freed: int


def old_run_folders(runs_dir: Path, before: datetime) -> list[Path]:
    """The run folders started before ``before``, the newest run excepted: ``latest``'s and the one started last
    (``latest`` is a folder, not a link, in a runs folder copied with ``cp -rL``; never a run of its own)."""
    started_at = {folder: started(read_record(folder / PLAN_FILE, RunPlan)) for folder in run_folders(runs_dir)}
    newest = {max(started_at, key=started_at.__getitem__).resolve()} if started_at else set()
    latest = runs_dir / LATEST_LINK
    if latest.is_symlink():
        newest.add(latest.resolve())
    old = [folder for folder, at in started_at.items() if at < before and folder.resolve() not in newest]
    return old + [folder for folder in never_opened(runs_dir) if folder.stat().st_mtime < before.timestamp()]


def never_opened(runs_dir: Path) -> list[Path]:
    """The folders of launched runs that failed before writing their plan (a config refused, say): a run folder's
    name, the lock that serializes opening it, and nothing else. No plan dates them: their own time does."""
    children = sorted(runs_dir.iterdir()) if runs_dir.is_dir() else []
    return [
        p
        for p in children
        if p.is_dir() and not p.is_symlink() and _named_as_run(p.name) and os.listdir(p) == [OPEN_LOCK_FILE]
    ]


def _named_as_run(name: str) -> bool:
    """``<start time>-...``, as a run's folder is named."""
    try:
        datetime.strptime(name[: len("2026-01-01T00-00-00Z")], TIMESTAMP)
    except ValueError:
        return False
    return True


def run_folders(runs_dir: Path) -> list[Path]:
    """The run folders in ``runs_dir``: not ``latest`` (a link, or a copied folder), nor any other link."""
    children = sorted(runs_dir.iterdir()) if runs_dir.is_dir() else []
    return [p for p in children if p.name != LATEST_LINK and not p.is_symlink() and is_run_folder(p)]


def remove_run_folders(runs_dir: Path, folders: list[Path]) -> Pruned:
    """Remove the folders (their preserved sandboxes included) and write the runs index again."""
    freed = sum(_size(folder) for folder in folders)
    for folder in folders:
        remove_tree(folder)
    if runs_dir.is_dir():
        write_index(runs_dir)
    return Pruned(folders, freed)


def _size(folder: Path) -> int:
    total = 0
    for root, _dirs, files in walk(folder):
        for name in files:
            path = os.path.join(root, name)
            info = os.lstat(path)
            if not stat.S_ISLNK(info.st_mode):
                total += info.st_blocks * 512  # the disk it takes (a sparse file's size is not freed space)
    return total
