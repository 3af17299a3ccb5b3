"""The sandbox interface: what agents, criteria and the stages may use of an evaluation's sandbox.

A driver (``tempdir``, ``docker``) implements it and is registered in
``sandbox/__init__.py``'s ``DRIVERS``; ``sandbox.driver`` in a task picks
one. Paths are the host's: a driver that runs commands elsewhere (a
container) mounts the sandbox at the same path, so that criteria read what
the commands wrote where they wrote it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..files import CRITERION_READ_CAP
from ..models.results import CommandRun
from ..models.sandbox import SandboxConfig
from .process import Interrupt


class Sandbox(Protocol):
    root: Path  # the sandbox folder, preserved after the evaluation for rescoring
    config: SandboxConfig
    interrupt: Interrupt  # the run's: once raised, no command starts and running ones are stopped

    @property
    def venv(self) -> Path | None:
        """The sandbox's own virtualenv, when the task asks for Python packages."""
        ...

    def create(self, task_dir: Path) -> None:
        """Lay out a fresh sandbox: the template sources in order, then the venv."""
        ...

    def run(self, command: str, timeout: float) -> CommandRun:
        """One shell command in the sandbox (capped by ``sandbox.limits.timeout``), its whole group killed at the
        timeout; a failure to run it is the result's ``error``, never an exception."""
        ...

    def environment(self) -> dict[str, str]:
        """What every command sees: never a credential."""
        ...

    def read_text(self, relative: str, cap: int = CRITERION_READ_CAP) -> tuple[str, bool]:
        """A sandbox file's first ``cap`` bytes as text, and whether it was longer."""
        ...

    def resolve_path(self, relative: str) -> Path:
        """A sandbox-relative path on this machine; one that leaves the sandbox is refused (PermissionError)."""
        ...

    def agent_command(self, home: Path, cli: str) -> str:
        """The command that starts an agent CLI in this sandbox, with ``home`` as its HOME."""
        ...

    def agent_launcher(self) -> list[str]:
        """The argv prefix an agent CLI is started through (into the evaluation's process namespace)."""
        ...

    def share(self, folder: Path) -> None:
        """Let the sandbox's commands read a host folder at its own path (the criteria's reference folder)."""
        ...

    def model_proxy_host(self) -> str:
        """The address at which an agent CLI started here reaches this machine (the model proxy)."""
        ...

    def close(self) -> None:
        """Release what the driver holds for the evaluation (a container); the folder stays."""
        ...
