"""The `tempdir` sandbox driver: a fresh folder per evaluation, confined.

The folder is created inside the run folder, so the final sandbox is
preserved where it ran (rescoring needs it, venv included), and criteria
read it there. Its commands, its venv's making and its agent CLIs run in the
evaluation's namespaces (``containment``), which bound their lifetime, hide
the harness, show them the sandbox at ``/sandbox`` with the system read-only
and nothing else of the host (``holder``), and give them no network but
what ``sandbox.network`` allows, phase by phase (``egress``).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import shlex
import shutil
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path, PurePosixPath

from ..files import CRITERION_READ_CAP, read_text_beneath
from ..layout import is_replicate_folder
from ..models.results import CommandRun
from ..models.sandbox import SandboxConfig
from ..secrets import sandbox_environment, setup_environment
from ..trees import remove_tree
from . import containment
from .base import LEFTOVERS_NOTE
from .egress import LOOPBACK, Gate, Refusal, gate_for, proxy_environment, refusal_notes
from .holder import SANDBOX_PATH, SandboxUnavailable, folder_showing, shown
from .mocks import install_mocks
from .process import Interrupt, run_shell
from .templates import TemplateError, apply_sources, inside_sandbox

VENV_TIMEOUT_S = 600
NODE_TIMEOUT_S = 300
LONGEST_COMMAND_S = 7 * 24 * 3600.0  # no command in a sandbox waits longer, whatever its timeout says
UV_CACHE_PATH = Path("/tmp/coder-eval-uv-cache")  # the run's package cache, as setup's uv sees it (setup only)
HOST_PATH = re.compile(r"(?<![\w.~-])/[\w.@+-]+(?:/[\w.@+-]+)*")


def shared_path(folder: Path) -> Path:
    """Where the criteria's commands see a host folder shared with them (``Sandbox.shared``): by its name, so the
    reference and the task's folder are shown at once, each at its own path."""
    return Path(f"/tmp/coder-eval-{folder.name}")


NPM_LOG_LINE = re.compile(r"^npm error A complete log of this run can be found in: .*$\n?", re.MULTILINE)


SCORING_STAGES = frozenset({"score", "post_run"})


def pip_shims(venv: str) -> str:
    """The step giving a venv made without pip of its own a ``pip`` and ``pip3`` that install into it: the bare
    ``pip`` agents and authors type ran the interpreter's, which installed into ``$HOME/.local`` (the phase's
    ``/tmp``, gone before the criteria ran) or failed. coder_eval's venv has its own pip. Where the interpreter
    has no pip (a Debian image without python3-pip), uv's pip installs into the venv instead."""
    python = f"{venv}/bin/python"
    shim = shlex.quote(
        f"#!/bin/sh\n{python} -c 'import pip' 2>/dev/null && exec {python} -m pip \"$@\"\n"
        f'exec uv pip "$@" --python {python}\n'
    )
    made = f"{{ printf {shim} > {venv}/bin/$name && chmod 755 {venv}/bin/$name; }}"
    return f"for name in pip pip3; do [ -e {venv}/bin/$name ] || {made}; done"


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
        self.gate: Gate | None = gate_for(config)  # None: the host's network (open)
        self.phase = "setup"

    @property
    def venv(self) -> Path | None:
        """The venv on this machine (its scripts name it as commands see it, under ``workdir``)."""
        python = self.config.python
        return self.root / ".venv" if python is not None and python.env_packages else None

    @property
    def workdir(self) -> Path:
        """The sandbox folder as its commands and agents see it: a path that names no run, variant or row."""
        return SANDBOX_PATH

    def environment(self) -> dict[str, str]:
        """What every command in the sandbox sees: no credentials, its own venv first, its private /tmp as
        HOME and TMPDIR, and (a confined network) the egress proxy."""
        extra = {
            "GIT_CEILING_DIRECTORIES": str(self.workdir.parent),
            "PYTHONDONTWRITEBYTECODE": "1",
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "PWD": str(self.workdir),
        }
        if self.venv is not None:
            extra["VIRTUAL_ENV"] = str(self.workdir / ".venv")
            extra["PATH"] = f"{self.workdir / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        if self.gate is not None:
            extra |= proxy_environment()
        return self.phase_settings(self.with_node(sandbox_environment(extra)))

    def with_node(self, env: dict[str, str]) -> dict[str, str]:
        """Node as coder_eval sets it up for a sandbox's commands: the sandbox's ``node_modules/.bin`` first on PATH
        (once there is one: ``node.env_packages``, or what a command installed), no NODE_PATH, and a sandbox-local
        npm prefix (a global install stays in the sandbox)."""
        if os.path.isdir(os.path.join(self.root, "node_modules", ".bin")):  # asked per command: no Path made
            env["PATH"] = f"{self.workdir / 'node_modules' / '.bin'}{os.pathsep}{env.get('PATH', '')}"
        return env | {"NODE_PATH": "", "NPM_CONFIG_PREFIX": str(self.workdir / ".npm-prefix")}

    def set_phase(self, phase: str) -> None:
        """The evaluation's stage now (setup, pre_run, agent, score, post_run): the network policy follows it, and
        the commands' environment (``phase_settings``)."""
        self.phase = phase
        if self.gate is not None:
            self.gate.phase = phase

    def phase_settings(self, env: dict[str, str]) -> dict[str, str]:
        """While the criteria run, no Python reads user site-packages: ``/tmp`` (their HOME) stays from one
        criterion to the next (and from the agent's turns while a pre_run service runs), and a ``.pth`` the agent's
        code left in ``~/.local`` ran in every later ``python3``."""
        return env | {"PYTHONNOUSERSITE": "1"} if self.phase in SCORING_STAGES else env

    def grant(self, url: str) -> None:
        """Let the agent reach an endpoint the harness points it at (its telemetry's); an open network needs no
        leave."""
        if self.gate is not None:
            self.gate.grant(url)

    def take_refused(self) -> list[Refusal]:
        """The connections the network policy refused since the last call."""
        return self.gate.take_refused() if self.gate is not None else []

    def create(self, task_dir: Path) -> None:
        """Lay out the folder: template sources in order, then the venv, the node packages and the CLI shims. The
        evaluation's folder is its user's alone meanwhile (``evaluation.write_result`` opens it once the sandbox
        holds no setuid file): a run cut short leaves no program of the agent's for another user to run."""
        self.root.parent.mkdir(parents=True, exist_ok=True)
        if self.config.driver == "tempdir":  # (a container sees none of the host)
            refuse_a_shown_root(self.root)
        if is_replicate_folder(self.root.parent):  # a run's <NN> (a redo's too); not `evaluate --run-dir`'s own
            os.chmod(self.root.parent, 0o700)
        if self.root.exists():
            remove_tree(self.root)
        sources = self.config.template_sources
        self.root.mkdir()
        apply_sources(sources, self.root, task_dir, self.config.ignore_patterns, self.interrupt)
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
        done = self.run_unlimited(command, NODE_TIMEOUT_S, setup=True)
        if not done.ok:
            # npm's pointer to its log names the sandbox's private /tmp, gone with the phase: no file to open
            said = NPM_LOG_LINE.sub("", done.error or done.stderr).strip()
            raise TemplateError(f"installing node packages failed: {said[-800:]}")

    def _make_venv(self) -> None:
        """The venv, made in the sandbox's namespaces like any command (a package's build runs confined, and
        reaches the package index only), with the run's package cache shown for the while. It sees the
        interpreter's own packages (pip among them), as coder_eval makes it: a task's env_packages add to what the
        machine provides, not take it away."""
        packages = shlex.join(self.config.python.env_packages if self.config.python else [])
        venv, uv, cache = self.workdir / ".venv", uv_binary(), self.cache_dir
        if uv:
            uv_cache = f"UV_CACHE_DIR={UV_CACHE_PATH} " if cache is not None else ""
            python = shlex.quote(sys.executable)
            steps = [f"{uv_cache}{uv} venv --quiet --system-site-packages --python {python} {venv}"]
            steps.append(f"{uv_cache}{uv} pip install --quiet --python {venv}/bin/python {packages}")
        else:
            steps = [f"{shlex.quote(sys.executable)} -m venv --system-site-packages {venv}"]
            steps.append(f"{venv}/bin/python -m pip install --quiet {packages}")
        steps.append(pip_shims(str(venv)))
        if cache is not None:
            cache.mkdir(parents=True, exist_ok=True)
        mounted = containment.mounted(self.root.parent, self.root, self.gate, cache, UV_CACHE_PATH) if cache else None
        with mounted or contextlib.nullcontext():
            for step in steps:
                done = self.run_unlimited(step, VENV_TIMEOUT_S, setup=True)
                if not done.ok:
                    why = (done.error or done.stderr).strip()[-800:]
                    raise TemplateError(f"creating the sandbox venv failed: {why}")

    def command_timeout(self, requested: float) -> float:
        """``sandbox.limits.timeout`` caps every command run in the sandbox, and a week any (a criterion's
        ``timeout: 1e300`` is valid, and overflowed the clock of the wait: the criterion crashed)."""
        limit = self.config.limits.timeout
        return min(requested, limit or requested, LONGEST_COMMAND_S)

    def model_proxy_host(self) -> str:
        """Where an agent CLI started here reaches the model proxy: its own loopback (a confined network gets a
        listener of the proxy's there)."""
        return LOOPBACK

    def agent_command(self, home: Path, cli: str) -> str:
        """The command that starts an agent CLI here: the CLI itself (the docker driver wraps it)."""
        return cli

    @contextlib.contextmanager
    def shared(self, folder: Path) -> Iterator[Path]:
        """The host folder mounted read-only in the evaluation's namespace, at a path of its private /tmp, for the
        block (the host's own path is not in the sandbox's view, and would name the run, the variant and the row).
        Read-only: a criterion's command runs the agent's code too (a hidden test imports it), and that code must
        not rewrite the reference or the checker the next criterion reads."""
        seen = shared_path(folder)
        with containment.mounted(self.root.parent, self.root, self.gate, folder, seen, read_only=True):
            yield seen

    def end_processes(self) -> None:
        """The evaluation's namespace let go of (ended, with what runs in it); its next command takes a fresh one."""
        containment.release(self.root.parent)

    def mark_services(self) -> None:
        containment.mark_services(self.root.parent)

    def end_leftovers(self) -> str | None:
        if containment.end_leftovers(self.root.parent):
            return None
        return f"{LEFTOVERS_NOTE}: the sandbox's namespace was ended, pre_run's services with it"

    def close(self) -> None:
        """Nothing to release: the folder is the sandbox (the docker driver removes its container here)."""

    def agent_launcher(self, home: Path, read_only: Mapping[Path, Path] | None = None) -> list[str]:
        """The prefix that starts an agent CLI, whose HOME is ``home``, in this evaluation's namespaces (with
        ``read_only``'s folders shown in ``home``)."""
        return containment.agent_launcher(self.root.parent, self.root, self.gate, home, read_only or {})

    def run(self, command: str, timeout: float) -> CommandRun:
        return self.run_unlimited(command, self.command_timeout(timeout))

    def run_unlimited(self, command: str, timeout: float, setup: bool = False) -> CommandRun:
        """One command in the evaluation's namespaces, not capped by ``sandbox.limits.timeout`` (setup's, the
        harness's own; a ``setup`` step also gets the package index settings); what the policies refused it is
        said in its stderr."""
        refused = self.gate.mark() if self.gate is not None else (0, 0)
        environment = self.environment() | (setup_environment() if setup else {})
        with containment.command_launcher(self.root.parent, self.root, self.gate) as launcher:
            done = run_shell(command, self.workdir, timeout, self.interrupt, environment, launcher)
        done.stderr += refusal_notes(self.gate, refused)
        if done.exit_code not in (0, None):
            hidden = sorted(path for path in set(HOST_PATH.findall(done.stderr)) if _hidden(path))
            done.stderr += "".join(
                f"[coder-eval: {path} is not visible in the sandbox (file confinement{_own(path)})]\n"
                for path in hidden
            )
        return done

    def read_text(self, relative: str, cap: int = CRITERION_READ_CAP) -> tuple[str, bool]:
        """A sandbox file's first ``cap`` bytes as text, and whether the file was longer (regular files only); its
        links followed as the sandbox's commands see them, never out of it."""
        return read_text_beneath(self.root.resolve(), relative, cap, PurePosixPath(SANDBOX_PATH))

    def resolve_path(self, relative: str) -> Path:
        """A sandbox-relative path; one that leaves the sandbox is refused."""
        return resolve_inside(self.root.resolve(), relative)


MAX_LINKS = 40  # as the kernel's ELOOP


def resolve_inside(root: Path, relative: str) -> Path:
    """``relative`` under ``root`` (a sandbox), its links followed as the sandbox's own commands see them: an
    absolute link under ``/sandbox``, where they see their sandbox (``ln -s "$PWD/x" y``), points inside it; any
    other absolute link, or a ``..`` above the root, leaves it (PermissionError)."""
    leaves = PermissionError(f"path {relative!r} leaves the sandbox")
    parts, current, links = list(Path(relative).parts), root, 0
    while parts:
        part = parts.pop(0)
        if part.startswith("/") or (part == ".." and current == root):  # "//etc" is a root part of its own
            raise leaves
        if part in ("", "."):
            continue
        if part == "..":
            current = current.parent
            continue
        candidate = current / part
        if not candidate.is_symlink():
            current = candidate
            continue
        links += 1
        target = Path(os.readlink(candidate))
        if links > MAX_LINKS:  # a loop of links names no file, as the kernel's ELOOP says to a command
            raise FileNotFoundError(errno.ELOOP, "a loop of links (too many levels of symbolic links)", relative)
        if target.is_absolute() and not target.is_relative_to(SANDBOX_PATH):
            raise leaves
        if target.is_absolute():
            current, target = root, target.relative_to(SANDBOX_PATH)
        parts = [*target.parts, *parts]
    return current


def refuse_a_shown_root(root: Path) -> None:
    """A sandbox whose folder commands would see from outside too (its runs folder in /opt or in a folder on PATH,
    not the project's) is not made: they would read the run's other evaluations and whatever lies beside it."""
    folder = folder_showing(root)
    if folder is not None:
        raise SandboxUnavailable(
            f"the sandbox {root} lies in {folder}, which commands see read-only (a system folder, a folder on PATH "
            "or of the harness's Python): they would read every evaluation of the run; put the runs folder "
            "elsewhere (--runs-dir), or in the folder coder-eval runs from"
        )


def prewarm_namespaces(configs: Iterable[SandboxConfig], workers: int) -> threading.Thread | None:
    """Start in the background the namespaces that the first ``workers`` evaluations of these sandboxes (one
    config an evaluation, in the order they start) will take (see ``containment.prewarm``)."""
    first = itertools.islice(configs, workers)
    kinds = Counter(gate_for(config) is not None for config in first if config.driver == "tempdir")
    return containment.prewarm(kinds) if kinds else None


SANDBOX_OWN_TEMP = ("/tmp", "/var/tmp", "/dev/shm")  # the sandbox's own, where the host's have files of their own


def _hidden(path: str) -> bool:
    """Whether a path a failed command named exists on this machine but not in the sandbox's view (a host file in
    /tmp too: the sandbox's /tmp is its own)."""
    own_temp = any(path.startswith(top + "/") for top in SANDBOX_OWN_TEMP)
    return (own_temp or not shown(path)) and os.path.lexists(path)


def _own(path: str) -> str:
    """Where the sandbox's place of its own hides the host's file of the same path."""
    top = next((top for top in SANDBOX_OWN_TEMP if path.startswith(top + "/")), None)
    return f": its {top} is its own" if top else ""


def uv_binary() -> str | None:
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except Exception:
        return shutil.which("uv")
