"""Apply template sources to a sandbox folder, honouring ignore rules."""

from __future__ import annotations

import fnmatch
import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import yaml

from ..models.sandbox import (
    REPO_FOLDER,
    RepoSource,
    StarterFilesSource,
    TemplateDirSource,
    TemplateSource,
    is_relative_local_path,
)
from ..places import dagster_home
from ..secrets import host_environment
from ..trees import walk
from .process import Interrupt, run_group

GIT_TIMEOUT_S = 300
_DEFAULTS_FILE = Path(__file__).parent.parent.parent / "resources" / "default_ignore_patterns.yaml"


class TemplateError(Exception):
    """A template source could not be applied (the evaluation ends as ERROR)."""


@functools.cache
def default_ignore_patterns() -> tuple[str, ...]:
    """coder_eval's defaults (its file as it is: lists by category, read in order as one list)."""
    data = yaml.safe_load(_DEFAULTS_FILE.read_text(encoding="utf-8"))
    lists = [entries for entries in data.values() if isinstance(entries, list)] if isinstance(data, dict) else [data]
    return tuple(dict.fromkeys(str(pattern) for entries in lists for pattern in entries))


def effective_ignore_patterns(overrides: list[str]) -> list[str]:
    """The defaults, minus each ``!pattern``, plus each bare pattern (each in its one form: models/ignore.py)."""
    removed = {p[1:] for p in overrides if p.startswith("!")}
    added = [p for p in overrides if not p.startswith("!")]
    return [p for p in default_ignore_patterns() if p not in removed] + added


def _ignored(relative: str, name: str, patterns: list[str]) -> bool:
    """A pattern matches the name or the template-relative path; an anchored one (``/sub``) the path only."""
    return any(
        fnmatch.fnmatch(relative, p[1:])
        if p.startswith("/")
        else fnmatch.fnmatch(name, p) or fnmatch.fnmatch(relative, p)
        for p in patterns
    )


def inside_sandbox(sandbox: Path, relative: str | Path) -> Path:
    """The real path of a write target, refused when a symbolic link leads it out of the sandbox.

    A template may ship a link (``esc -> /host/dir``); writing through it
    would reach the host, so every write target is checked after resolving links.
    """
    root = sandbox.resolve()
    target = (root / relative).resolve()
    if target != root and root not in target.parents:
        raise TemplateError(f"{relative} leads out of the sandbox (through a symbolic link); nothing was written there")
    return target


def copy_template_dir(
    source: Path, sandbox: Path, mount_point: str, patterns: list[str], include: Sequence[str] = ()
) -> None:
    """Copy ``source`` over ``sandbox/mount_point`` (last wins), skipping ignored names.

    A name is ignored when it, or a folder it is in, matches ``patterns``;
    ``include`` (a template_dir's ``include_patterns``, as coder_eval's) copies
    an ignored path all the same when its template-relative path matches one
    of them (``fnmatchcase``, so ``*`` crosses ``/``: ``dist/*`` is all of
    ``dist``). Links in the template are copied as links, never followed; a
    link already in the sandbox is replaced, not written through; files that
    are neither (devices, FIFOs) are refused. What the harness keeps in
    ``source`` is never copied, include patterns or not (:func:`_harness_folders`).
    """
    if not source.is_dir():
        raise TemplateError(f"template_dir not found: {source}")
    ignored_folders: set[Path] = set()  # ignored, yet walked: an include pattern may name something inside
    harness = _harness_folders(sandbox)
    folders = _Folders(sandbox)
    for folder, dirs, files in walk(source):  # iterative: an agent's thousand nested folders (`evaluate` of them)
        here = Path(folder)
        base = here.relative_to(source)
        in_ignored = base in ignored_folders
        kept = []
        for name in dirs:
            if _is_the_harness(here / name, harness):
                continue
            if in_ignored or ignored_entry(base, name, patterns):
                if not include:
                    continue  # nothing can be re-included below it: not walked
                ignored_folders.add(base / name)
            kept.append(name)
        dirs[:] = kept
        if not in_ignored or _included(base, include):
            folders.make(Path(mount_point) / base)
        for name in sorted(files):  # a link to a folder among them: copied as a link
            if (in_ignored or ignored_entry(base, name, patterns)) and not _included(base / name, include):
                continue
            into = folders.make(Path(mount_point) / base)  # (made above, unless re-included in an ignored folder)
            _copy_entry(here / name, into / name)


class _Folders:
    """The sandbox's folders a copy made, by their sandbox-relative paths, with their real paths: one below them is
    checked by its own name (a link there resolved in full), so a tree costs a step a folder, not one per level
    above it (an agent's 1,100 nested folders took 27 s to copy for `evaluate`)."""

    def __init__(self, sandbox: Path) -> None:
        self.sandbox = sandbox
        self.real: dict[Path, Path] = {}

    def make(self, relative: Path) -> Path:
        """A template's folder in the sandbox, and the folders it is in; a file an earlier source wrote in the way
        is an error saying which (as a starter file over a folder is)."""
        known = self.real.get(relative)
        if known is not None:
            return known
        parent = self.real.get(relative.parent) if relative != relative.parent else None
        if parent is not None and not (parent / relative.name).is_symlink():
            target = parent / relative.name
        else:
            target = inside_sandbox(self.sandbox, relative)
        try:
            target.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise TemplateError(f"template folder {relative.as_posix()} is a file in the sandbox") from None
        self.real[relative] = target
        return target


def _harness_folders(sandbox: Path) -> dict[str, set[str]]:
    """The folders a template copy leaves out, by name then real path: the sandbox and every folder holding it (its
    run's, the runs folder: ``template_dir: .`` run from the task's folder, or ``evaluate TASK .``, with the default
    ``./runs``, copied every earlier run, their agents' sandboxes too, into each new one), and the Dagster home the
    harness uses (its instance, ``./.dagster`` by default)."""
    itself = Path(os.path.realpath(sandbox))
    found: dict[str, set[str]] = {}
    for folder in (itself, *itself.parents, Path(os.path.realpath(dagster_home()))):
        found.setdefault(folder.name, set()).add(str(folder))
    return found


def _is_the_harness(folder: Path, harness: dict[str, set[str]]) -> bool:
    real = harness.get(folder.name)  # a real path only for a name that may be one: a copy costs no more
    return real is not None and os.path.realpath(folder) in real


def ignored_entry(base: Path, name: str, patterns: list[str]) -> bool:
    return _ignored(str(base / name) if str(base) != "." else name, name, patterns)


def _included(relative: Path, include: Sequence[str]) -> bool:
    """Whether a template-relative path matches an include pattern (a leading ``./`` on the pattern is dropped)."""
    text = relative.as_posix()
    return any(fnmatch.fnmatchcase(text, pattern.replace("\\", "/").removeprefix("./")) for pattern in include)


def _copy_entry(source: Path, target: Path) -> None:
    """One file or link of a template, onto its target in a checked folder of the sandbox."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    if source.is_symlink():
        os.symlink(os.readlink(source), target)
    elif source.is_file():
        shutil.copy2(source, target, follow_symlinks=False)
    else:
        raise TemplateError(f"template file {source} is not a regular file, folder or link")


def write_starter_file(sandbox: Path, relative: str, content: str) -> None:
    """Write one starter file: a link on its way that leaves the sandbox is refused; one at its own name is replaced,
    never written through (a template's ``CLAUDE.md -> AGENTS.md`` under a variant's CLAUDE.md rewrote AGENTS.md)."""
    parent = inside_sandbox(sandbox, Path(relative).parent)
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise TemplateError(
            f"starter file {relative}: {_file_on_the_way(sandbox, relative)} is a file in the sandbox"
        ) from None
    target = parent / Path(relative).name
    if target.is_symlink():
        target.unlink()
    elif target.is_dir():
        raise TemplateError(f"starter file {relative} is a folder in the sandbox")
    target.write_text(content, encoding="utf-8")


def _file_on_the_way(sandbox: Path, relative: str) -> str:
    """The first of the folders ``relative`` is in that an earlier source made a file, as the task names it."""
    folders = list(reversed(Path(relative).parents))[1:]  # from the outermost, without the sandbox itself
    return next((f.as_posix() for f in folders if not (sandbox / f).is_dir()), Path(relative).parent.as_posix())


def run_setup_step(command: list[str], env: dict[str, str], timeout: float, what: str, interrupt: Interrupt) -> None:
    """One sandbox-setup subprocess (its whole group stopped at its timeout or the run's interrupt); any failure is
    a TemplateError naming ``what``."""
    try:
        done = run_group(command, timeout, env, interrupt)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TemplateError(f"{what} failed: {exc}") from None
    if done.returncode != 0:
        raise TemplateError(f"{what} failed: {done.stderr.strip()[-800:]}")


def repo_location(url: str, task_dir: Path) -> str:
    """A relative local path is relative to the task YAML, as a template_dir is, when it is there; else as given
    (relative to the current folder, as git reads it). A URL or ``host:path`` is as given."""
    if not is_relative_local_path(url) or not (task_dir / url).exists():
        return url
    return str(task_dir / url)


def clone_repo(
    source: RepoSource, destination: Path, env: dict[str, str], task_dir: Path, interrupt: Interrupt
) -> None:
    """Clone a repository (URL, local path or file:// URL) into ``destination``, checked out at its ``commit``.

    As coder_eval: ``git clone -- URL`` (a URL beginning with ``-`` is a
    path, never an option) then ``git checkout COMMIT``, which takes a commit,
    a tag, or a branch the clone has only as ``origin/<branch>`` (made a local
    branch tracking it). The trailing ``--`` reads ``COMMIT`` as a revision
    only, never as a file of the clone.
    """
    commit = source.commit
    if commit and commit.startswith("-"):  # refused when the task is read; never handed to git as an option
        raise TemplateError(f"repo commit {commit!r} is not a branch, tag or commit")
    clone = ["git", "clone", "--quiet", "--", repo_location(source.url, task_dir), str(destination)]
    run_setup_step(clone, env, GIT_TIMEOUT_S, "git clone", interrupt)
    if commit:
        checkout = ["git", "-C", str(destination), "checkout", "--quiet", commit, "--"]
        run_setup_step(checkout, env, GIT_TIMEOUT_S, f"git checkout {commit}", interrupt)


def apply_sources(
    sources: list[TemplateSource],
    sandbox: Path,
    task_dir: Path,
    ignore: list[str],
    interrupt: Interrupt,
) -> None:
    patterns = effective_ignore_patterns(ignore)
    for source in sources:
        if isinstance(source, RepoSource):  # the first source (check_repo_first): nothing is in repo/ yet
            git_env = host_environment({"GIT_CEILING_DIRECTORIES": str(sandbox.parent)})  # a clone: on this machine
            clone_repo(source, inside_sandbox(sandbox, REPO_FOLDER), git_env, task_dir, interrupt)
        elif isinstance(source, TemplateDirSource):
            copy_template_dir(task_dir / source.path, sandbox, source.mount_point, patterns, source.include_patterns)
        elif isinstance(source, StarterFilesSource):
            for starter in source.files:
                write_starter_file(sandbox, starter.path, starter.content)
