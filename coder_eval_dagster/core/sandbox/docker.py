"""The `docker` sandbox driver: one container per evaluation, whose limits bind.

The evaluation's sandbox folder stays on the host (criteria read it there,
rescoring reuses it) and is bind-mounted into the container at the same
path, like the evaluation's I/O folder, the shared uv cache and the agent
CLIs (read-only): a path means the same thing on both sides. Every command
runs in the container through the engine's exec API. The container's id is
kept in ``container.json`` beside the sandbox, so that every stage of the
evaluation, in any process, finds it; a stage that finds none (a rescore, a
container swept meanwhile) starts a fresh one on the same folder.

Commands: ``timeout -s KILL`` inside the container kills a command's whole
process group at its timeout (it needs no new process, so it works at the
pids limit too); output goes to files in the I/O folder, so a background
daemon cannot hold the command open. A command still running well after its
timeout, or when the run is interrupted, takes the container with it.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import json
import logging
import os
import re
import shlex
import shutil
import sys
import tarfile
import time
import uuid
from pathlib import Path
from typing import Any

from ..layout import CONTAINER_FILE, DOCKER_IO_DIR
from ..models.results import CommandRun
from ..models.sandbox import SandboxConfig
from ..secrets import redact
from .engine import (
    LABEL,
    LABEL_OWNER,
    EngineError,
    client,
    container_running,
    default_image,
    labelled_containers,
    owner_label,
    remove_container,
    require_image,
    sweep_orphans,
)
from .process import INTERRUPTED_ERROR, Interrupt, read_capped
from .tempdir import LOOPBACK, VENV_TIMEOUT_S, TempdirSandbox
from .templates import TemplateError

log = logging.getLogger(__name__)
IMAGE_UID = 1000  # the image's `sandbox` user
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
CONTAINER_CA_BUNDLE = "/etc/coder-eval/ca-certificates.crt"
KILL_GRACE_S = 5.0  # past its timeout, a command still running takes the container with it
OOM_EXIT = 137
_OOM_COUNTER = re.compile(r"^oom_kill (\d+)$", re.MULTILINE)
# cgroup v2, then v1: the container sees its own memory cgroup at one of these.
_OOM_COMMAND = ["cat", "/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"]


def agent_cli_folders() -> list[Path]:
    """The folders of the agent CLIs this harness ships (claude-code's, codex's), mounted read-only."""
    folders = []
    with contextlib.suppress(ImportError):
        import claude_agent_sdk

        folders.append(Path(claude_agent_sdk.__file__).parent / "_bundled")
    with contextlib.suppress(ImportError):
        from codex_cli_bin import bundled_codex_path

        folders.append(Path(bundled_codex_path()).parent)
    return [folder for folder in folders if folder.is_dir()]


def _chown_tree(top: Path, uid: int) -> None:
    """Hand a folder to the container's user (the harness runs as root; the container never does).

    A folder it already owns is left alone: what is inside was made by the container (the uv cache,
    a sandbox whose container is started again).
    """
    if top.stat().st_uid == uid:
        return
    os.lchown(top, uid, uid)
    for folder, names, files in os.walk(top):
        for name in names + files:
            os.lchown(os.path.join(folder, name), uid, uid)


class DockerSandbox(TempdirSandbox):
    """A TempdirSandbox whose commands, venv and agent tools run inside its own container."""

    def __init__(
        self,
        root: Path,
        config: SandboxConfig,
        cache_dir: Path | None = None,
        labels: dict[str, str] | None = None,
        interrupt: Interrupt | None = None,
    ):
        # the engine needs absolute paths to bind-mount (a run folder may be given relative)
        super().__init__(root.absolute(), config, cache_dir.absolute() if cache_dir is not None else None, interrupt)
        self.labels = labels or {}
        self.image = config.image or default_image()

    # ----------------------------------------------------------------- layout

    @property
    def folder(self) -> Path:
        """The evaluation's folder (the sandbox's parent)."""
        return self.root.parent

    @property
    def io_dir(self) -> Path:
        return self.folder / DOCKER_IO_DIR

    @property
    def uv_cache(self) -> Path | None:
        """The uv cache the containers share, apart from the host's (it belongs to the container user)."""
        return self.cache_dir.with_name(f"{self.cache_dir.name}-docker") if self.cache_dir is not None else None

    @property
    def user(self) -> str:
        uid = IMAGE_UID if os.geteuid() == 0 else os.geteuid()
        gid = IMAGE_UID if os.geteuid() == 0 else os.getegid()
        return f"{uid}:{gid}"

    def environment(self) -> dict[str, str]:
        """What every command in the container sees: nothing of the host's environment."""
        env = {
            "PATH": CONTAINER_PATH,
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "GIT_CEILING_DIRECTORIES": str(self.folder),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        if self.venv is not None:
            env["VIRTUAL_ENV"] = str(self.venv)
            env["PATH"] = f"{self.venv / 'bin'}:{CONTAINER_PATH}"
        if self.uv_cache is not None:
            env["UV_CACHE_DIR"] = str(self.uv_cache)
        if HOST_CA_BUNDLE.is_file():  # the host's CAs: package indexes behind an intercepting proxy
            env |= {"SSL_CERT_FILE": CONTAINER_CA_BUNDLE, "PIP_CERT": CONTAINER_CA_BUNDLE}
        return env

    # ----------------------------------------------------------------- lifecycle

    def create(self, task_dir: Path) -> None:
        """The folder as tempdir lays it out, then the container (and in it, the venv)."""
        self.close()  # a container of an earlier attempt at this evaluation
        super().create(task_dir)
        self.container_id()

    def _make_venv(self) -> None:
        packages = self.config.python.env_packages if self.config.python else []
        venv, install = shlex.quote(str(self.venv)), shlex.join(packages)
        for step in (
            f"uv venv --quiet --python python3 {venv}",
            f"uv pip install --quiet --python {venv}/bin/python {install}",
        ):
            done = self.run_unlimited(step, VENV_TIMEOUT_S)
            if not done.ok:
                raise TemplateError(f"creating the sandbox venv failed: {(done.error or done.stderr).strip()[-800:]}")

    def container_id(self) -> str:
        """The running container of this evaluation, started now if there is none."""
        state = self._state()
        if state and container_running(state["id"]):
            return state["id"]
        if state:
            self.close()
        return self._start()

    def close(self) -> None:
        """Remove the container (whatever runs in it) and its bookkeeping; the sandbox folder stays.

        An engine that stopped answering leaves the container to the next run's sweeper: the
        evaluation's result is not worth losing over it.
        """
        state = self._state()
        if state:
            try:
                remove_container(state["id"])
            except Exception as exc:
                log.warning("could not remove container %s (the next run sweeps it): %s", state["id"][:12], exc)
            (self.folder / CONTAINER_FILE).unlink(missing_ok=True)
        shutil.rmtree(self.io_dir, ignore_errors=True)

    def _state(self) -> dict[str, Any] | None:
        path = self.folder / CONTAINER_FILE
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _start(self) -> str:
        sweep_orphans()
        require_image(self.image)
        self.root.mkdir(parents=True, exist_ok=True)
        self.io_dir.mkdir(exist_ok=True)
        mounts = {self.root: "rw", self.io_dir: "rw"}
        if self.uv_cache is not None:
            self.uv_cache.mkdir(parents=True, exist_ok=True)
            mounts[self.uv_cache] = "rw"
        if os.geteuid() == 0:
            for folder in mounts:
                _chown_tree(folder, IMAGE_UID)
        volumes = {str(path): {"bind": str(path), "mode": mode} for path, mode in mounts.items()}
        volumes |= {str(path): {"bind": str(path), "mode": "ro"} for path in agent_cli_folders()}
        if HOST_CA_BUNDLE.is_file():
            volumes[str(HOST_CA_BUNDLE)] = {"bind": CONTAINER_CA_BUNDLE, "mode": "ro"}
        container = client().containers.create(
            self.image,
            ["sleep", "infinity"],
            init=True,  # reaps orphans: zombies would count against the pids limit
            user=self.user,
            working_dir=str(self.root),
            network_mode=self.config.network,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            volumes=volumes,
            labels=self._labels(),
            **self._limits(),
        )
        _register_for_exit(self.interrupt)
        (self.folder / CONTAINER_FILE).write_text(
            json.dumps({"id": container.id, "image": self.image}), encoding="utf-8"
        )
        container.start()
        return container.id

    def _labels(self) -> dict[str, str]:
        named = {f"{LABEL}.{key}": value for key, value in self.labels.items()}
        return {LABEL: "sandbox", LABEL_OWNER: owner_label(), "coder-eval.folder": str(self.folder), **named}

    def _limits(self) -> dict[str, Any]:
        """``sandbox.limits`` as engine settings: memory without extra swap, CPUs, pids."""
        limits, kwargs = self.config.limits, {}
        if limits.max_memory_mb is not None:
            kwargs["mem_limit"] = kwargs["memswap_limit"] = f"{limits.max_memory_mb}m"
        if limits.max_cpus is not None:
            kwargs["nano_cpus"] = int(limits.max_cpus * 1e9)
        if limits.max_pids is not None:
            kwargs["pids_limit"] = limits.max_pids
        return kwargs

    # ----------------------------------------------------------------- agents

    def agent_launcher(self) -> list[str]:
        """Nothing to prefix: the container is the agent's confinement (``agent_command`` enters it)."""
        return []

    def model_proxy_host(self) -> str:
        """Where the CLI in the container reaches this machine: loopback on the host's network, else the
        bridge's gateway (the model proxy then also listens there; other hosts cannot reach that address)."""
        if self.config.network != "bridge":
            return LOOPBACK
        return str(client().networks.get("bridge").attrs["IPAM"]["Config"][0]["Gateway"])

    def agent_command(self, home: Path, cli: str) -> str:
        """A launcher running ``cli`` in the container (see docker_attach), with ``home`` copied in at its path."""
        self._copy_in(home)
        launcher = home / "docker" / Path(cli).name
        launcher.parent.mkdir(exist_ok=True)
        spec = {"container": self.container_id(), "user": self.user, "docker_host": os.environ.get("DOCKER_HOST")}
        module = "coder_eval_dagster.core.sandbox.docker_attach"
        command = [sys.executable, "-m", module, json.dumps(spec), cli]
        launcher.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n', encoding="utf-8")
        launcher.chmod(0o700)
        return str(launcher)

    def _copy_in(self, folder: Path) -> None:
        """Copy a host folder into the container at the same path, owned by the container's user."""
        uid, gid = (int(part) for part in self.user.split(":"))

        def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
            return info

        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            archive.add(folder, arcname=str(folder).lstrip("/"), filter=owned)
        client().api.put_archive(self.container_id(), "/", buffer.getvalue())

    # ----------------------------------------------------------------- commands

    def run(self, command: str, timeout: float) -> CommandRun:
        return self.run_unlimited(command, self.command_timeout(timeout))

    def run_unlimited(self, command: str, timeout: float) -> CommandRun:
        """One shell command in the container, killed with its process group at ``timeout``."""
        if self.interrupt.is_set():
            return CommandRun(command=command, error=INTERRUPTED_ERROR)
        start = time.perf_counter()
        try:
            container = self.container_id()
            return self._exec(container, command, timeout, start)
        except EngineError as exc:
            return CommandRun(command=command, error=str(exc), duration_s=round(time.perf_counter() - start, 3))
        except Exception as exc:  # the engine refused the exec (container gone, pids limit at exec time)
            error = f"the docker engine failed: {type(exc).__name__}: {exc}"
            return CommandRun(command=command, error=redact(error), duration_s=round(time.perf_counter() - start, 3))

    def _exec(self, container: str, command: str, timeout: float, start: float) -> CommandRun:
        token = uuid.uuid4().hex
        out, err = self.io_dir / f"{token}.out", self.io_dir / f"{token}.err"
        script = 'exec timeout -s KILL "$0" /bin/sh -c "$1" >"$2" 2>"$3" </dev/null'
        argv = ["/bin/sh", "-c", script, f"{timeout:g}", command, str(out), str(err)]
        api = client().api
        exec_id = api.exec_create(
            container, argv, environment=self.environment(), workdir=str(self.root), user=self.user
        )
        api.exec_start(exec_id["Id"], detach=True)
        exit_code, stopped = self._wait(exec_id["Id"], start + timeout + KILL_GRACE_S)
        duration = time.perf_counter() - start
        timed_out = stopped == "timeout" or (exit_code == OOM_EXIT and duration >= timeout)
        result = CommandRun(
            command=command,
            exit_code=None if timed_out or stopped else exit_code,
            stdout=redact(read_capped(out)) if out.exists() else "",
            stderr=redact(read_capped(err)) if err.exists() else "",
            duration_s=round(duration, 3),
            timed_out=timed_out,
        )
        out.unlink(missing_ok=True)
        err.unlink(missing_ok=True)
        if timed_out:
            result.error = f"timed out after {timeout:g} s (process group killed in the container)"
        elif stopped:
            result.error = "stopped: the run was interrupted (container removed)"
        elif exit_code == OOM_EXIT and self._oom_killed():
            result.oom_killed = True
            result.error = (
                f"killed by the out-of-memory killer (OOMKilled): the command exceeded "
                f"sandbox.limits.max_memory_mb={self.config.limits.max_memory_mb}"
            )
        return result

    def _wait(self, exec_id: str, deadline: float) -> tuple[int | None, str | None]:
        """Poll the exec until it ends; past the deadline or on an interruption, remove the container."""
        api, pause = client().api, 0.002
        while True:
            state = api.exec_inspect(exec_id)
            if not state["Running"] and state["ExitCode"] is not None:
                return state["ExitCode"], None
            stop = "interrupted" if self.interrupt.is_set() else "timeout" if time.perf_counter() > deadline else None
            if stop:
                self.close()
                return None, stop
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _oom_killed(self) -> bool:
        """Did the container's memory cgroup OOM-kill a process since the last check (kept in container.json)?"""
        state = self._state() or {}
        done = client().api.exec_start(client().api.exec_create(state["id"], _OOM_COMMAND, user=self.user)["Id"])
        kills = sum(int(n) for n in _OOM_COUNTER.findall(done.decode(errors="replace")))
        seen = state.get("oom_kills", 0)
        (self.folder / CONTAINER_FILE).write_text(json.dumps(state | {"oom_kills": kills}), encoding="utf-8")
        return kills > seen


def remove_own_containers(interrupt: Interrupt) -> None:
    """At the exit of an interrupted run: remove every sandbox container this process created and did not close.

    Only when interrupted: a process that runs one stage of a run (a Dagster step) leaves its
    containers to the evaluations' later stages, which may run in another process.
    """
    if not interrupt.is_set():
        return
    with contextlib.suppress(Exception):
        for container in labelled_containers(f"{LABEL_OWNER}={owner_label()}"):
            remove_container(container["Id"])


@functools.cache
def _register_for_exit(interrupt: Interrupt) -> None:
    atexit.register(remove_own_containers, interrupt)
