"""The task's reference solution as the criteria see it: its text (the judges'), and its folder (``$REFERENCE_DIR``).

A ``reference: {directory: D}`` folder is copied into the evaluation's
folder only while its criteria are checked, and removed afterwards: it does
not exist while the agent works, and it is never inside the sandbox (a test
runner or a glob there would find it). The criteria's commands reach it
where their sandbox shows it (``Sandbox.shared``: under tempdir, a path of
their private /tmp; under docker, a copy in the container at the same path).
The copy is private: a criterion that writes into it cannot change the
task's own folder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .files import MAX_DOCUMENT_BYTES, UnreadableFile, read_input_text
from .models.task import Task
from .sandbox.base import Sandbox

STAGED_REFERENCE = "reference"  # beside the sandbox, in the evaluation's folder, while criteria run


@dataclass(frozen=True)
class StagedReference:
    folder: Path  # on this machine: what criteria read themselves
    seen: Path  # the same folder as the sandbox's commands see it ($REFERENCE_DIR)


def reference_text(task: Task, task_dir: Path) -> str | None:
    """The reference as the judges are shown it: the file, the code, or every text file of the folder."""
    reference = task.reference
    if reference is None:
        return None
    if reference.code is not None:
        return reference.code
    if reference.file is not None:
        return (task_dir / reference.file).read_text(encoding="utf-8")
    return _folder_text(task_dir / str(reference.directory))


def _folder_text(folder: Path) -> str:
    """``### <path>`` and the text of each regular file, in path order, up to the document size limit."""
    sections: list[str] = []
    size = 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        try:
            text = read_input_text(path, MAX_DOCUMENT_BYTES)
        except (OSError, UnicodeDecodeError, UnreadableFile):
            continue  # a binary or unreadable file has no text to show
        size += len(text)
        if size > MAX_DOCUMENT_BYTES:
            sections.append(f"[... the rest of the reference folder is left out: over {MAX_DOCUMENT_BYTES} bytes]")
            break
        sections.append(f"### {path.relative_to(folder).as_posix()}\n{text}")
    return "\n\n".join(sections)


@contextmanager
def staged_reference(task: Task, task_dir: Path, folder: Path, sandbox: Sandbox) -> Iterator[StagedReference | None]:
    """The reference folder's private copy while the block runs (None: the task has no reference folder)."""
    reference = task.reference
    if reference is None or reference.directory is None:
        yield None
        return
    staged = folder / STAGED_REFERENCE
    shutil.rmtree(staged, ignore_errors=True)
    _copy_files(task_dir / reference.directory, staged)
    try:
        with sandbox.shared(staged) as seen:
            yield StagedReference(staged, seen)
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def _copy_files(source: Path, target: Path) -> None:
    """Folders and regular files only: a link in the reference is left out, never followed."""
    target.mkdir(parents=True)
    for here, dirs, files in os.walk(source):
        relative = Path(here).relative_to(source)
        dirs[:] = [d for d in dirs if not (Path(here) / d).is_symlink()]
        for name in dirs:
            (target / relative / name).mkdir()
        for name in files:
            path = Path(here) / name
            if path.is_file() and not path.is_symlink():
                shutil.copy2(path, target / relative / name)
