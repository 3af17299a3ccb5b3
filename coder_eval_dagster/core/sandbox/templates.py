"""Apply template sources to a sandbox folder, honouring ignore rules."""

from __future__ import annotations

import fnmatch
import functools
import shutil
import subprocess
from pathlib import Path

import yaml

from ..models.sandbox import RepoSource, StarterFilesSource, TemplateDirSource, TemplateSource

GIT_TIMEOUT_S = 300
_DEFAULTS_FILE = Path(__file__).parent.parent.parent / "resources" / "default_ignore_patterns.yaml"


class TemplateError(Exception):
    """A template source could not be applied (the evaluation ends as ERROR)."""


@functools.cache
def default_ignore_patterns() -> tuple[str, ...]:
    return tuple(yaml.safe_load(_DEFAULTS_FILE.read_text(encoding="utf-8")))


def effective_ignore_patterns(overrides: list[str]) -> list[str]:
    """The defaults, minus each ``!pattern``, plus each bare pattern."""
    removed = {p[1:].strip() for p in overrides if p.startswith("!")}
    added = [p for p in overrides if not p.startswith("!")]
    return [p for p in default_ignore_patterns() if p not in removed] + added


def _ignored(relative: str, name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(relative, p) for p in patterns)


def copy_template_dir(source: Path, destination: Path, patterns: list[str]) -> None:
    """Copy ``source`` over ``destination`` (last wins), skipping ignored names."""
    if not source.is_dir():
        raise TemplateError(f"template_dir not found: {source}")

    def ignore(folder: str, names: list[str]) -> set[str]:
        base = Path(folder).relative_to(source)
        return {n for n in names if _ignored(str(base / n) if str(base) != "." else n, n, patterns)}

    shutil.copytree(source, destination, ignore=ignore, dirs_exist_ok=True, symlinks=True)


def run_setup_step(command: list[str], env: dict[str, str], timeout: float, what: str) -> None:
    """One sandbox-setup subprocess; any failure is a TemplateError naming ``what``."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TemplateError(f"{what} failed: {exc}") from None
    if done.returncode != 0:
        raise TemplateError(f"{what} failed: {done.stderr.strip()[-800:]}")


def clone_repo(source: RepoSource, destination: Path, env: dict[str, str]) -> None:
    """Clone a repository (URL, local path or file:// URL) at its pinned commit."""
    commands = [["git", "clone", "--quiet", source.url, str(destination)]]
    if source.commit:
        commands.append(["git", "-C", str(destination), "checkout", "--quiet", "--detach", source.commit])
    for command in commands:
        run_setup_step(command, env, GIT_TIMEOUT_S, " ".join(command[:3]))


def apply_sources(
    sources: list[TemplateSource], sandbox: Path, task_dir: Path, ignore: list[str], env: dict[str, str]
) -> None:
    patterns = effective_ignore_patterns(ignore)
    for source in sources:
        if isinstance(source, RepoSource):
            clone_repo(source, sandbox, env)
        elif isinstance(source, TemplateDirSource):
            copy_template_dir(task_dir / source.path, sandbox / source.mount_point, patterns)
        elif isinstance(source, StarterFilesSource):
            for starter in source.files:
                target = sandbox / starter.path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(starter.content, encoding="utf-8")
