"""The sandbox interface: what agents, criteria and the stages may use of an evaluation's sandbox.

A driver (``tempdir``, ``docker``) implements it and is registered in
``sandbox/__init__.py``'s ``DRIVERS``; ``sandbox.driver`` in a task picks
one. ``root`` is the sandbox on this machine, where criteria read it;
``workdir`` is the same folder as commands and agents see it (tempdir:
``/sandbox``; docker: mounted at the same path as ``root``).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from ..files import CRITERION_READ_CAP
from ..models.results import CommandRun
from ..models.sandbox import SandboxConfig
from .egress import Refusal
from .process import Interrupt

# The start of ``end_leftovers``'s note, each driver saying what it ended instead.
LEFTOVERS_NOTE = "what was left running in the sandbox could not be ended one by one"


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
        timeout; a failure to run it is the result's ``error``, never an exception, except ``holder.SandboxUnavailable``
        (the sandbox itself is gone: the evaluation's ERROR)."""
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

    def agent_launcher(self, home: Path, read_only: Mapping[Path, Path] | None = None) -> list[str]:
        """The argv prefix an agent CLI whose HOME is ``home`` is started through (into the evaluation's
        namespaces), with ``read_only``'s host folders shown read-only at their paths in ``home`` (its installed
        tools, where the sandbox would not show them)."""
        ...

    @property
    def workdir(self) -> Path:
        """The sandbox folder as its commands and agents see it (``root`` is where it is on this machine)."""
        ...

    def set_phase(self, phase: str) -> None:
        """The evaluation's stage now (setup, pre_run, agent, score, post_run): the network policy follows it."""
        ...

    def grant(self, url: str) -> None:
        """Let the agent phase reach ``url``'s host and port: an endpoint the harness itself points the agent CLI
        at (its telemetry's), which the task's network policy need not name."""
        ...

    def take_refused(self) -> list[Refusal]:
        """The connections the network policy refused since the last call."""
        ...

    def shared(self, folder: Path) -> AbstractContextManager[Path]:
        """Let the sandbox's commands reach a host folder for the block (the criteria's reference folder, the task's
        folder); yields its path as they see it, one per folder name."""
        ...

    def end_processes(self) -> None:
        """End every process an earlier stage left running in the sandbox (a pre_run service, an agent's daemon)."""
        ...

    def mark_services(self) -> None:
        """pre_run has ended: what runs now is the task's services (``end_leftovers`` keeps them)."""
        ...

    def end_leftovers(self) -> str | None:
        """End what the agent's phase, or the criterion checked last, left running; the task's services stay. What
        could not be ended one by one ends with everything in the sandbox, the services too: then a note for the
        evaluation's warnings (the checks after it run without them)."""
        ...

    def model_proxy_host(self) -> str:
        """The address at which an agent CLI started here reaches this machine (the model proxy)."""
        ...

    def close(self) -> None:
        """Release what the driver holds for the evaluation (a container); the folder stays."""
        ...
