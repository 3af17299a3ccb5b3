"""Content fingerprints of resolved row-tasks, for change detection (the file sensor).

A row-task's fingerprint covers everything that decides its result: the
resolved task (prompt, criteria, limits, agent, sandbox), its dataset row,
and the content of the files it points at (template folders, the reference
file, the replay trajectory). Folder hashes are computed once per call.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .models.sandbox import TemplateDirSource
from .resolution import RowTask

HASH_CHARS = 16


def folder_digest(folder: Path) -> str:
    """Hash of every file's relative path and content under ``folder`` (missing: empty)."""
    digest = hashlib.sha256()
    if folder.is_dir():
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            for name in sorted(files):
                path = Path(root) / name
                digest.update(os.fsencode(path.relative_to(folder)) + b"\0")  # a name's bytes, UTF-8 or not
                _hash_content(digest, path)
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    _hash_content(digest, path)
    return digest.hexdigest() if path.is_file() else ""


def _hash_content(digest: Any, path: Path) -> None:
    """A regular file's bytes, streamed; a link, device or FIFO counts by its name only (never opened)."""
    if path.is_file() and not path.is_symlink():
        with path.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                digest.update(chunk)


def fingerprints(row_tasks: list[RowTask]) -> dict[tuple[str, str], str]:
    """{(task_id, variant_id): fingerprint} for every row-task."""
    folders: dict[Path, str] = {}
    files: dict[Path, str] = {}

    def cached(cache: dict[Path, str], path: Path, compute: Callable[[Path], str]) -> str:
        if path not in cache:
            cache[path] = compute(path)
        return cache[path]

    result = {}
    for row_task in row_tasks:
        task, base = row_task.task, row_task.task_dir
        # the dataset block lists every row: a sibling row's edit must not touch this row-task
        digest = hashlib.sha256(task.model_dump_json(exclude={"dataset"}).encode())
        digest.update(json.dumps(row_task.row, sort_keys=True, default=str).encode())
        for source in task.sandbox.template_sources:
            if isinstance(source, TemplateDirSource):
                digest.update(cached(folders, (base / source.path).resolve(), folder_digest).encode())
        for relative in (task.reference.file if task.reference else None, task.agent.trajectory):
            if relative:
                digest.update(cached(files, (base / relative).resolve(), file_digest).encode())
        result[(row_task.task_id, row_task.variant_id)] = digest.hexdigest()[:HASH_CHARS]
    return result


def resolution_digest(prints: dict[tuple[str, str], str]) -> str:
    """One digest of a resolution's row-task fingerprints: task_definitions' data version."""
    return hashlib.sha256(json.dumps(sorted(prints.items())).encode()).hexdigest()[:HASH_CHARS]
