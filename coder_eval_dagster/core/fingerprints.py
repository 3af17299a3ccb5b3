"""Content fingerprints of resolved row-tasks, for change detection (the file sensor).

A row-task's fingerprint covers everything that decides its result: the
resolved task (prompt, criteria, limits, agent, sandbox), its dataset row,
and the content of the files it reads at run time: template folders, a local
template repository's commit, the reference file or folder, the replay
trajectory, the agent's plugin folders, a judge's ``$TASK_DIR/`` files and,
when a criterion names ``$TASK_DIR``, the task's folder as it is staged for
the criteria. Each folder, file and repository is hashed once per call (a
sensor tick), however many row-tasks share it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .criteria.judge_base import JudgeBase
from .criteria.judging import TASK_DIR_PREFIX
from .models.sandbox import RepoSource, TemplateDirSource
from .models.task import Task
from .reference import family_folder, over_the_cap, reads_task_dir, regular_entries
from .resolution import RowTask
from .sandbox.holder import harness_places
from .sandbox.templates import repo_location
from .trees import walk

HASH_CHARS = 16
GIT_TIMEOUT_S = 10
OVER_THE_CAP = "over the cap"  # the $TASK_DIR digest of a task whose folder is not staged (its criteria fail)


def folder_digest(folder: Path) -> str:
    """Hash of every file's relative path and content under ``folder`` (missing: empty); a link (to a file or a
    folder) counts by its target, never followed, as a template copies it."""
    entries = []
    if folder.is_dir():
        for root, dirs, files in walk(folder):
            dirs.sort()
            entries += [(Path(root) / name).relative_to(folder) for name in sorted(files)]
    return _entries_digest(folder, entries)


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    _hash_content(digest, path)
    return digest.hexdigest() if path.is_file() else ""


def staged_digest(source: Path, task_dir: Path | None) -> str | None:
    """Hash of what reference.py stages of ``source`` for the criteria (its walk, so its left-out rules); None when
    a copy of the task's folder (``task_dir`` given) is over the cap, found from the sizes before a file is read."""
    source = source.resolve()
    entries, files, size = [], 0, 0
    for relative in regular_entries(source, task_dir):
        if not (source / relative).is_dir():
            files, size = files + 1, size + (source / relative).stat().st_size
            if task_dir is not None and over_the_cap(files, size):
                return None
        entries.append(relative)
    return _entries_digest(source, sorted(entries))


def repo_revision(url: str, task_dir: Path, commit: str | None) -> str:
    """The commit a clone of a local repository checks out (``commit``, else its HEAD): a new commit there is an
    edit, its uncommitted changes are not (a clone has none). A remote one is not asked (a network call a tick),
    nor one git cannot read: empty."""
    location = repo_location(url, task_dir)
    if not Path(location).is_dir():
        return ""
    revision = f"{commit or 'HEAD'}^{{commit}}"
    command = ["git", "-C", location, "rev-parse", "--verify", "--quiet", "--end-of-options", revision]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _entries_digest(folder: Path, entries: Iterable[Path]) -> str:
    digest = hashlib.sha256()
    for relative in entries:
        digest.update(os.fsencode(relative) + b"\0")  # a name's bytes, UTF-8 or not
        _hash_content(digest, folder / relative)
    return digest.hexdigest()


def _hash_content(digest: Any, path: Path) -> None:
    """A regular file's bytes, streamed; a link's target (never followed); a folder, device or FIFO counts by its
    name only (never opened)."""
    if path.is_symlink():
        digest.update(b"\0link\0" + os.fsencode(os.readlink(path)))
    elif path.is_file():
        with path.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                digest.update(chunk)


class _CallDigests:
    """The digests of one call, each computed once: 10,000 row-tasks share a few folders, files and repositories,
    and name them alike (each real path is looked up once too)."""

    def __init__(self) -> None:
        self.real = functools.cache(_real_path)
        self.folder = functools.cache(folder_digest)
        self.file = functools.cache(file_digest)
        self.staged = functools.cache(staged_digest)
        self.repo = functools.cache(repo_revision)
        self.task_dir = functools.cache(self._task_dir)

    def _task_dir(self, task_dir: Path) -> str:
        """What the criteria see as ``$TASK_DIR``, decided as staging decides: the folder holding the task's with
        it when that is under the cap, else the task's folder alone, else nothing (over the cap). Walked once for
        the tasks of one folder, keeping that folder as the copy keeps it (a folder holding a harness place, the
        project's folder coder-eval runs in, is kept when it holds the task's)."""
        places = [Path(place) for place in harness_places()]
        for source in dict.fromkeys(filter(None, (family_folder(task_dir), task_dir))):
            # the task's folder is what a copy keeps only where a harness place lies in the source: else one walk
            kept = task_dir if any(place.is_relative_to(source) for place in places) else source
            digest = self.staged(source, kept)
            if digest is not None:
                return digest
        return OVER_THE_CAP


def fingerprints(row_tasks: list[RowTask]) -> dict[tuple[str, str], str]:
    """{(task_id, variant_id): fingerprint} for every row-task."""
    digests = _CallDigests()
    result = {}
    for row_task in row_tasks:
        # the dataset block lists every row: a sibling row's edit must not touch this row-task
        digest = hashlib.sha256(row_task.task.model_dump_json(exclude={"dataset"}).encode())
        digest.update(json.dumps(row_task.row, sort_keys=True, default=str).encode())
        for part in _files_read(row_task.task, row_task.task_dir, digests):
            digest.update(part.encode())
        result[(row_task.task_id, row_task.variant_id)] = digest.hexdigest()[:HASH_CHARS]
    return result


def _files_read(task: Task, base: Path, digests: _CallDigests) -> Iterator[str]:
    """The digest of each file, folder and repository the task reads at run time; a task that reads none of the
    later ones keeps the fingerprint it had before they counted."""
    for source in task.sandbox.template_sources:
        if isinstance(source, TemplateDirSource):
            yield digests.folder(digests.real(base, source.path))
    reference = task.reference
    for relative in (reference.file if reference else None, task.agent.trajectory):
        if relative:
            yield digests.file(digests.real(base, relative))
    for source in task.sandbox.template_sources:
        if isinstance(source, RepoSource):
            yield digests.repo(source.url, base, source.commit)
    if reference and reference.directory:
        yield digests.staged(digests.real(base, reference.directory), None) or ""
    for plugin in task.agent.plugins or []:
        yield digests.folder(digests.real(base, plugin.path))  # absolute: made so when the task was read
    for criterion in task.success_criteria:
        if isinstance(criterion, JudgeBase):
            named = (entry[len(TASK_DIR_PREFIX) :] for entry in criterion.files if entry.startswith(TASK_DIR_PREFIX))
            yield from (digests.file(digests.real(base, relative)) for relative in named)
    if reads_task_dir(task):
        yield digests.task_dir(digests.real(base, "."))


def _real_path(base: Path, relative: str) -> Path:
    return (base / relative).resolve()


def resolution_digest(prints: dict[tuple[str, str], str]) -> str:
    """One digest of a resolution's row-task fingerprints: task_definitions' data version."""
    return hashlib.sha256(json.dumps(sorted(prints.items())).encode()).hexdigest()[:HASH_CHARS]
