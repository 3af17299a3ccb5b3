"""What the criteria see of the task's files: the reference's text (the judges'), and two folders staged for them.

A ``reference: {directory: D}`` folder (``$REFERENCE_DIR``) and, when a
``run_command`` criterion names ``$TASK_DIR``, the task file's own folder
are copied into the evaluation's folder only while its criteria are
checked, and removed afterwards: they do not exist while the agent works,
and they are never inside the sandbox (a test runner or a glob there would
find them). The criteria's commands reach each where their sandbox shows it
(``Sandbox.shared``: under tempdir, a path of their private /tmp; under
docker, a copy in the container at the same path). The copies are private:
a criterion that writes into one cannot change the task's own folder.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .files import MAX_DOCUMENT_BYTES, UnreadableFile, read_input_text
from .models.criterion import TASK_DIR
from .models.task import Task
from .places import dagster_home, user_home
from .resolution import is_run_output
from .sandbox.base import Sandbox
from .sandbox.holder import harness_places

STAGED_REFERENCE = "reference"  # beside the sandbox, in the evaluation's folder, while criteria run
STAGED_TASK_DIR = "task_dir"  # the task file's folder ($TASK_DIR), there too
# The cap on $TASK_DIR's copy: a task file at the top of a large folder of tasks copies nothing rather than gigabytes.
TASK_DIR_MAX_FILES = 20_000
TASK_DIR_MAX_BYTES = 64 * 2**20
# Credentials files wherever they lie, never copied: ./.env (the CLI takes the run's keys from it) and its kin
# (.env.local, .envrc, prod.env), a .netrc, git's stored credentials.
CREDENTIAL_FILE = re.compile(r"\.env(\..*)?|\.envrc|.*\.env|\.netrc|\.git-credentials|\.pypirc|\.npmrc", re.IGNORECASE)


@dataclass(frozen=True)
class StagedReference:
    folder: Path  # on this machine: what criteria read themselves
    seen: Path  # the same folder as the sandbox's commands see it ($REFERENCE_DIR)


@dataclass(frozen=True)
class StagedTaskDir:
    seen: Path | None  # the copy as the sandbox's commands see it ($TASK_DIR); None: refused
    refused: str | None = None  # why it was not copied (over the cap): the error of the criteria naming it


def reference_text(task: Task, task_dir: Path) -> str | None:
    """The reference as the judges are shown it: the file, the code, or every text file of the folder."""
    reference = task.reference
    if reference is None:
        return None
    if reference.code is not None:
        return reference.code
    if reference.file is not None:
        return read_input_text(task_dir / reference.file)
    return _folder_text(task_dir / str(reference.directory))


class RefusedFolder(Exception):
    """A folder a task names for its criteria that holds the harness's own files (see ``refused_folder``)."""


def refused_folder(folder: Path) -> str | None:
    """Why ``folder`` is never copied for the criteria (None: it may be): the user's home itself (its files), one in
    the Dagster home, or a run's output or one in it. What a copy leaves out below its top (``regular_entries``)
    cannot cover the top: ``reference: {directory: ../..}`` from ``~/evals/t1`` was the home, copied whole."""
    real = folder.resolve()
    if real == user_home():
        return "it is the user's home"
    if real.is_relative_to(dagster_home().resolve()):
        return "it lies in the Dagster home"
    if any(is_run_output(place) for place in (real, *real.parents)):
        return "it is, or lies in, a run's output"
    return None


def _folder_text(folder: Path) -> str:
    """``### <path>`` and the text of each regular file the folder's copy would hold, in path order, up to the
    document size limit (the header ``outcome.FILE_HEADER`` splits on, to scrub each file); none of a refused
    folder's."""
    if why := refused_folder(folder):
        return f"[the reference folder is not shown: {why}]"
    sections: list[str] = []
    size = 0
    folder = folder.resolve()
    for path in sorted(folder / entry for entry in regular_entries(folder, None) if not (folder / entry).is_dir()):
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
    if why := refused_folder(task_dir / reference.directory):
        raise RefusedFolder(f"reference.directory {reference.directory}: {why}: it is never copied for the criteria")
    _copy_files(task_dir / reference.directory, staged, None)
    with _shown(staged, sandbox) as seen:
        yield StagedReference(staged, seen)


def stages_folders(task: Task) -> bool:
    """Whether scoring the task stages a copy of its reference folder or of its own folder for the criteria."""
    reference = task.reference is not None and task.reference.directory is not None
    return reference or reads_task_dir(task)


def reads_task_dir(task: Task) -> bool:
    return any(criterion.reads_task_dir() for criterion in task.success_criteria)


@contextmanager
def staged_task_dir(task: Task, task_dir: Path, folder: Path, sandbox: Sandbox) -> Iterator[StagedTaskDir | None]:
    """The task file's folder's private copy while the block runs, when a criterion names ``TASK_DIR`` (None:
    none does, and nothing is copied): with the folder holding it (not the user's home) when that is under the cap
    too, else alone; a folder over the cap is not copied, its criteria fail saying so."""
    if not reads_task_dir(task):
        yield None
        return
    task_dir = task_dir.resolve()  # a task named from its own folder is in "." (whose parent is "." again)
    if why := refused_folder(task_dir):
        yield StagedTaskDir(
            None, f"${TASK_DIR}: the task's folder {task_dir}: {why}: keep the task in a folder of its own"
        )
        return
    staged = folder / STAGED_TASK_DIR
    # with the folder holding it first, as coder_eval's tasks reach a family's files: $TASK_DIR/../shared/check.py
    for source in dict.fromkeys(filter(None, (family_folder(task_dir), task_dir))):
        if _copy_files(source, staged, task_dir):
            with _shown(staged, sandbox) as seen:
                yield StagedTaskDir(seen / task_dir.relative_to(source))
            return
    yield StagedTaskDir(
        None,
        f"${TASK_DIR}: the task's folder {task_dir} holds more than the cap on its copy for the criteria "
        f"({TASK_DIR_MAX_FILES} files, {TASK_DIR_MAX_BYTES // 2**20} MiB); keep the task file in a smaller "
        "folder of its own",
    )


def family_folder(task_dir: Path) -> Path | None:
    """The folder above the task's, to copy with it, unless it is or holds the user's home (a task in ``~/evals``:
    the home's own files) or is a run's output: None then, and the task's folder is copied alone."""
    above = task_dir.parent
    return None if user_home().is_relative_to(above) or is_run_output(above) else above


@contextmanager
def _shown(staged: Path, sandbox: Sandbox) -> Iterator[Path]:
    """A copy in the evaluation's folder shown to the sandbox's commands for the block, and removed after it;
    yields where they see it."""
    try:
        with sandbox.shared(staged) as seen:
            yield seen
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def over_the_cap(files: int, size: int) -> bool:
    """Whether a copy of the task's folder holding ``files`` files of ``size`` bytes is past its cap."""
    return files > TASK_DIR_MAX_FILES or size > TASK_DIR_MAX_BYTES


def _copy_files(source: Path, target: Path, task_dir: Path | None) -> bool:
    """Folders and regular files only: a link is left out, never followed (and so are the harness's places).
    A copy of the task's folder (``task_dir`` given) stops at the cap: False, and nothing is left of it."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    source = source.resolve()
    files = size = 0
    for relative in regular_entries(source, task_dir, target.parent):
        if (source / relative).is_dir():
            (target / relative).mkdir()
            continue
        files, size = files + 1, size + (source / relative).stat().st_size
        if task_dir is not None and over_the_cap(files, size):
            shutil.rmtree(target, ignore_errors=True)
            return False
        shutil.copy2(source / relative, target / relative)
    return True


def regular_entries(source: Path, task_dir: Path | None, evaluation: Path | None = None) -> Iterator[Path]:
    """Each folder and regular file under ``source`` (a real path), relative to it, a folder before what it holds.

    Links are left out, never followed; so are ``.env`` files, and a folder
    holding a harness place but not what is copied (the task's folder, else
    ``source``): the evaluation's own (a runs folder inside the task's
    folder: the copy would hold the runs, itself included), another run's
    output, the user's home, the Dagster home, the folder coder-eval runs in.
    For a copy of the task's folder (``task_dir``: the folder or the one
    holding it), what starts with a dot is left out too (``.git``, ``.venv``,
    the CLI's ``.dagster`` beside the tasks).
    """
    harness = [Path(place) for place in harness_places()] + ([evaluation.resolve()] if evaluation else [])
    hidden = task_dir is None
    kept = task_dir or source
    for here, dirs, files in os.walk(source):
        base = Path(here)
        dirs[:] = [d for d in dirs if not _left_out(base / d, kept, hidden, harness)]
        for name in dirs:
            yield (base / name).relative_to(source)
        for name in files:
            path = base / name
            if _copied_file(path, hidden):
                yield path.relative_to(source)


def _left_out(folder: Path, kept: Path, hidden: bool, harness: list[Path]) -> bool:
    """A link, a hidden folder (unless ``hidden`` ones are copied), or one holding a harness place or a run's
    output but not ``kept``."""
    if folder.is_symlink() or (not hidden and folder.name.startswith(".")):
        return True
    holds_harness = any(place.is_relative_to(folder) for place in harness) or is_run_output(folder)
    return holds_harness and not kept.is_relative_to(folder)


def _copied_file(path: Path, hidden: bool) -> bool:
    """A regular file, not a credentials file (``.env`` and its kin), nor hidden (unless ``hidden`` ones are)."""
    name = path.name
    credentials = CREDENTIAL_FILE.fullmatch(name) is not None
    return not credentials and (hidden or not name.startswith(".")) and path.is_file() and not path.is_symlink()
