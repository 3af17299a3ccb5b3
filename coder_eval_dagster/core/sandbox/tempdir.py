"""The `tempdir` sandbox driver: a fresh folder per evaluation.

The folder is created inside the run folder, so the final sandbox is
preserved where it ran (rescoring needs it, venv included). Its commands
run in the evaluation's process namespace (``containment``), which bounds
their lifetime and hides the harness, not what files they can reach; see the
`docker` driver for that.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

from ..files import CRITERION_READ_CAP, read_text_capped
from ..models.results import CommandRun
from ..models.sandbox import SandboxConfig
from ..secrets import sandbox_environment
from . import containment
from .mocks import install_mocks
from .process import Interrupt, run_shell
from .templates import TemplateError, apply_sources, inside_sandbox, run_setup_step

VENV_TIMEOUT_S = 600
NODE_TIMEOUT_S = 300
LOOPBACK = "127.0.0.1"


class TempdirSandbox:
    def __init__(
        self,
        root: Path,
        config: SandboxConfig,
        cache_dir: Path | None = None,
        labels: dict[str, str] | None = None,  # names an evaluation's container; a folder has none to name
        interrupt: Interrupt | None = None,
    ):
        self.root = root
        self.config = config
        self.cache_dir = cache_dir
        # the run's interrupt (from its run context); a sandbox standing alone (a test, a notebook) has its own
        self.interrupt = interrupt or Interrupt()

    @property
    def venv(self) -> Path | None:
        python = self.config.python
        return self.root / ".venv" if python is not None and python.env_packages else None

    def environment(self) -> dict[str, str]:
        """What every command in the sandbox sees: no credentials, its own venv first."""
        extra = {"GIT_CEILING_DIRECTORIES": str(self.root.parent), "PYTHONDONTWRITEBYTECODE": "1"}
        if self.venv is not None:
            extra["VIRTUAL_ENV"] = str(self.venv)
            extra["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        return sandbox_environment(extra)

    def create(self, task_dir: Path) -> None:
        """Lay out the folder: template sources in order, then the venv, the node packages and the CLI shims."""
        self.root.parent.mkdir(parents=True, exist_ok=True)
        if self.root.exists():
            shutil.rmtree(self.root)
        sources = self.config.template_sources
        if not (sources and sources[0].type == "repo"):
            self.root.mkdir()
        apply_sources(sources, self.root, task_dir, self.config.ignore_patterns, self.environment())
        if self.venv is not None:
            inside_sandbox(self.root, self.venv.name)  # a template's `.venv` link must not take the venv out
            self._make_venv()
        self._install_node_packages()
        install_mocks(self.root, self.config)

    def _install_node_packages(self) -> None:
        """``sandbox.node.env_packages`` into the sandbox folder: ``bun add`` when bun is there, else npm."""
        packages = self.config.node.env_packages if self.config.node else []
        if not packages:
            return
        names = shlex.join(packages)
        command = (
            f"if command -v bun >/dev/null 2>&1; then bun add {names}; "
            f"else npm install --no-audit --no-fund {names}; fi"
        )
        done = self.run_unlimited(command, NODE_TIMEOUT_S)
        if not done.ok:
            raise TemplateError(f"installing node packages failed: {(done.error or done.stderr).strip()[-800:]}")

    def _make_venv(self) -> None:
        venv = self.venv
        if venv is None:  # create() calls this only when the task asks for packages
            return
        packages = self.config.python.env_packages if self.config.python else []
        env = self.environment()
        if self.cache_dir is not None:
            env["UV_CACHE_DIR"] = str(self.cache_dir)
        uv = uv_binary()
        if uv:
            steps = [
                [uv, "venv", "--quiet", "--python", sys.executable, str(venv)],
                [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), *packages],
            ]
        else:
            steps = [
                [sys.executable, "-m", "venv", str(venv)],
                [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *packages],
            ]
        for step in steps:
            run_setup_step(step, env, VENV_TIMEOUT_S, "creating the sandbox venv")

    def command_timeout(self, requested: float) -> float:
        """``sandbox.limits.timeout`` caps every command run in the sandbox."""
        limit = self.config.limits.timeout
        return min(requested, limit) if limit else requested

    def model_proxy_host(self) -> str:
        """Where an agent CLI started here reaches this machine (the model proxy): its own loopback."""
        return LOOPBACK

    def agent_command(self, home: Path, cli: str) -> str:
        """The command that starts an agent CLI here: the CLI itself (the docker driver wraps it)."""
        return cli

    def share(self, folder: Path) -> None:
        """Nothing to do: commands run on this machine, where the folder is (the docker driver copies it in)."""

    def close(self) -> None:
        """Nothing to release: the folder is the sandbox (the docker driver removes its container here)."""

    def agent_launcher(self) -> list[str]:
        """The prefix that starts an agent CLI in this evaluation's process namespace (see ``containment``)."""
        return containment.agent_launcher(self.root.parent, self.root)

    def run(self, command: str, timeout: float) -> CommandRun:
        return self.run_unlimited(command, self.command_timeout(timeout))

    def run_unlimited(self, command: str, timeout: float) -> CommandRun:
        """A command of the harness's own (setup), not capped by ``sandbox.limits.timeout``."""
        with containment.command_launcher(self.root.parent, self.root) as launcher:
            return run_shell(command, self.root, timeout, self.interrupt, self.environment(), launcher)

    def read_text(self, relative: str, cap: int = CRITERION_READ_CAP) -> tuple[str, bool]:
        """A sandbox file's first ``cap`` bytes as text, and whether the file was longer (regular files only)."""
        return read_text_capped(self.resolve_path(relative), cap, relative)

    def resolve_path(self, relative: str) -> Path:
        """A sandbox-relative path; one that leaves the sandbox is refused."""
        root = self.root.resolve()
        target = (root / relative).resolve()
        if target != root and root not in target.parents:
            raise PermissionError(f"path {relative!r} leaves the sandbox")
        return target


def uv_binary() -> str | None:
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except Exception:
        return shutil.which("uv")
