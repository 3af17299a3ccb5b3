"""An evaluation's container (docker driver): started on first use, found again by any stage, removed at its end.

The sandbox folder is bind-mounted at ``/sandbox`` (its working directory:
a path that names no run, variant or row, as under tempdir), the
evaluation's I/O folder at ``/run/coder-eval``; the shared uv cache and the
agent CLIs this harness ships (read-only) at the same paths as on the host,
which name no evaluation. The container's
id is kept in ``container.json`` beside the sandbox, so that every stage of
the evaluation, in any process, finds it; a stage that finds none (a
rescore, a container swept meanwhile) starts a fresh one on the same folder.
So is the process scoring in it: a resumed run's scoring that finds another
process's there restarts the container first (``Container.id``).
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
import shutil
import tarfile
import threading
from pathlib import Path
from typing import Any

from ..layout import CONTAINER_FILE, DOCKER_IO_DIR, is_replicate_folder
from ..models.sandbox import SandboxConfig
from ..trees import walk
from .engine import (
    LABEL,
    LABEL_FOLDER,
    LABEL_OWNER,
    EngineError,
    client,
    container_running,
    owner_label,
    remove_container,
    require_image,
    sdk,
    sweep_orphans,
)
from .holder import SANDBOX_PATH
from .process import Interrupt

log = logging.getLogger(__name__)
IMAGE_UID = 1000  # the image's `sandbox` user
# Who keeps the container up (its init and `sleep infinity`): not the commands' user, so that no command, nor the
# ending of what a criterion's command left (docker.SWEEPING, as that user), can end the container (nobody, no root
# either).
KEEPER_USER = "65534:65534"
_mine: set[str] = set()  # the sandbox containers this process started and has not closed
_mine_lock = threading.Lock()
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
CONTAINER_CA_BUNDLE = "/etc/coder-eval/ca-certificates.crt"
_OOM_COUNTER = re.compile(r"^oom_kill (\d+)$", re.MULTILINE)
EGRESS_SOCKET = "egress.sock"  # in the I/O folder: the harness listens there, the container's forwarder connects
IO_PATH = Path("/run/coder-eval")  # the I/O folder, as the container sees it
# The forwarder (the image's python3, as the container's user): listens on the container's 127.0.0.1 at each
# port given and relays each connection to the harness's socket, its first line naming the port. It returns
# once they are bound (its listening half lives on, reaped by the container's init); a port already forwarded
# is skipped.
FORWARDER = r"""
import os, socket, sys, threading
os.chdir(os.path.dirname(sys.argv[1]))  # connected to by its name: a socket's path may be at most 107 bytes long
path, listeners = os.path.basename(sys.argv[1]), []
for port in map(int, sys.argv[2:]):
    listener = socket.socket()
    try:
        listener.bind(("127.0.0.1", port))
    except OSError:
        continue
    listener.listen(64)
    listeners.append((listener, port))
if not listeners or os.fork():
    os._exit(0)
os.setsid()
null = os.open("/dev/null", os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
def pump(source, sink):
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    try:
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def relay(client, port):
    with client, socket.socket(socket.AF_UNIX) as harness:
        try:
            harness.connect(path)
            harness.sendall(b"%d\n" % port)
        except OSError:
            return
        back = threading.Thread(target=pump, args=(harness, client))
        back.start()
        pump(client, harness)
        back.join()
def accept(listener, port):
    while True:
        client, _ = listener.accept()
        threading.Thread(target=relay, args=(client, port), daemon=True).start()
for listener, port in listeners:
    threading.Thread(target=accept, args=(listener, port)).start()
"""
# cgroup v2, then v1: the container sees its own memory cgroup at one of these.
_OOM_COMMAND = ["cat", "/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"]
# The shell the sweeps run in (docker.SWEEPING, LEFTOVERS): the image's, copied execute-only by root, so that a
# process of the commands' user can neither trace it nor write its memory (a program its user cannot read runs
# non-dumpable) and make it exit 0 having ended nothing. It can still be killed or stopped: the harness then
# restarts the container.
SWEEP_SHELL = "/usr/local/lib/coder-eval/sh"
_MAKE_SWEEP_SHELL = f"mkdir -p {SWEEP_SHELL.rsplit('/', 1)[0]} && cp /bin/sh {SWEEP_SHELL} && chmod 0111 {SWEEP_SHELL}"


class Container:
    """The container of the evaluation in ``folder`` (the sandbox's parent)."""

    def __init__(
        self,
        folder: Path,
        config: SandboxConfig,
        image: str,
        uv_cache: Path | None,
        labels: dict[str, str],
        interrupt: Interrupt,
        forwarded: list[int] | None = None,
    ):
        """``forwarded``: a confined network's ports relayed to the harness (its egress proxy, allowed loopback
        ports); None: the container's network is ``sandbox.network``'s own (``bridge``, ``host``, ``none``)."""
        self.folder, self.config, self.image = folder, config, image
        self.uv_cache, self.labels, self.interrupt = uv_cache, labels, interrupt
        self.forwarded = forwarded
        self.scoring = False  # set by the sandbox while its scoring phase runs (criteria, post_run)

    @property
    def sandbox(self) -> Path:
        return self.folder / "sandbox"

    @property
    def io_dir(self) -> Path:
        """Where commands write their output (a file, so that a background daemon cannot hold a pipe open)."""
        return self.folder / DOCKER_IO_DIR

    @property
    def egress_socket(self) -> Path:
        return self.io_dir / EGRESS_SOCKET

    def forward(self, ports: list[int]) -> None:
        """Relay the container's 127.0.0.1 at ``ports`` to the harness (those already relayed stay as they are)."""
        api = client().api
        argv = ["python3", "-I", "-S", "-c", FORWARDER, str(IO_PATH / EGRESS_SOCKET), *map(str, ports)]
        exec_id = api.exec_create(self.id(), argv, user=self.user)["Id"]
        api.exec_start(exec_id)
        if api.exec_inspect(exec_id)["ExitCode"] != 0:
            raise EngineError(f"the container's network forwarder did not start (ports {ports})")

    @property
    def user(self) -> str:
        """Who runs its commands: the image's user when the harness is root, else the harness's own."""
        uid = IMAGE_UID if os.geteuid() == 0 else os.geteuid()
        gid = IMAGE_UID if os.geteuid() == 0 else os.getegid()
        return f"{uid}:{gid}"

    def id(self) -> str:
        """The running container of this evaluation, started now if there is none; the scoring phase's first use
        takes it over (``_take_for_scoring``)."""
        state = self._state()
        if state and container_running(state["id"]):
            if self.scoring and state.get("scorer") != owner_label():
                self._take_for_scoring(state)
            return str(state["id"])
        if state:
            self.close()
        return self._start()

    def _take_for_scoring(self, state: dict[str, Any]) -> None:
        """Record this process as the one scoring in the container. One that another process scored in holds a
        scoring cut short (that process died; a resume redoes the phase), whose commands may still run there and
        write into the sandbox: the container is restarted, which ends every process in it (pre_run's services too,
        as that process's death ends a tempdir sandbox's) and keeps its files, the sandbox phase's ``/tmp`` among
        them."""
        cut_short = state.get("scorer") is not None
        self._write_state(state | {"scorer": owner_label()})  # first: the restart's relay finds it taken
        if cut_short:
            with _mine_lock:
                _mine.add(state["id"])  # this process's now: removed at its exit, as those it started
            self.restart()

    def restart(self) -> None:
        """End every process in the container, the keeper's too, and start it again: its files and mounts stay, its
        network relay is started again. (Its memory cgroup, made again, counts OOM kills from 0; pre_run's services
        have ended: none is listed, and the relay is started again after the next sweep of what was left.)"""
        state = self._state() or {}
        client().api.restart(state["id"], timeout=0)
        self._write_state({key: value for key, value in state.items() if key not in ("oom_kills", "services")})
        if self.forwarded is not None:
            self.forward(self.forwarded)

    def close(self) -> None:
        """Remove the container (whatever runs in it) and its bookkeeping; the sandbox folder stays.

        An engine that stopped answering leaves the container to the next run's sweeper: the
        evaluation's result is not worth losing over it.
        """
        state = self._state()
        if state:
            with _mine_lock:
                _mine.discard(state["id"])
            try:
                remove_container(state["id"])
            except Exception as exc:
                log.warning("could not remove container %s (the next run sweeps it): %s", state["id"][:12], exc)
            (self.folder / CONTAINER_FILE).unlink(missing_ok=True)
        shutil.rmtree(self.io_dir, ignore_errors=True)

    def gone(self, error: Exception) -> bool:
        """Whether the engine's refusal ``error`` came from the container not being there to run in: removed (its
        execs with it) or stopped. (Its messages for it vary: 404, 409, or 500 "is not running: Removal In
        Progress".)"""
        errors = sdk().errors
        if isinstance(error, errors.NotFound):
            return True
        return isinstance(error, errors.APIError) and self.vanished()

    def vanished(self) -> bool:
        """Whether the container was removed or stopped (a command in it killed with it). A forced removal marks
        it ``removing`` before it kills what runs there, so a command's end can be seen while it still runs."""
        errors = sdk().errors
        state = self._state()
        if state is None:
            return False
        try:
            found = client().api.inspect_container(state["id"])["State"]
        except errors.NotFound:
            return True
        except errors.APIError:
            return False  # the engine cannot tell: the command's failure, as any other refusal
        return not found["Running"] or found.get("Status") in ("removing", "dead")

    def copy_in(self, folder: Path, at: Path | None = None, read_only: bool = False) -> None:
        """Copy a host folder into the container at ``at`` (else the same path), owned by the container's user; or
        (``read_only``) by root, unwritable to that user: what a criterion's command, the agent's code, reads and
        must not change (the staged reference, the task's folder)."""
        uid, gid = (0, 0) if read_only else tuple(int(part) for part in self.user.split(":"))

        def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
            if read_only:
                info.mode &= ~0o022
            return info

        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            archive.add(folder, arcname=str(at or folder).lstrip("/"), filter=owned)
        client().api.put_archive(self.id(), "/", buffer.getvalue())

    def remove_as_root(self, path: Path) -> None:
        """``rm -rf`` of a read-only copy (``copy_in``): the container's user cannot remove it."""
        api = client().api
        api.exec_start(api.exec_create(self.id(), ["rm", "-rf", "--", str(path)], user="0:0")["Id"])

    def running(self) -> bool:
        """Whether this evaluation's container is up (without starting one)."""
        state = self._state()
        return state is not None and container_running(state["id"])

    def shell(self, script: str, *args: str) -> str:
        """``script`` run by ``sh`` as the commands' user (its ``$1``... the ``args``), to its end: its output."""
        api = client().api
        argv = ["/bin/sh", "-c", script, "coder-eval", *args]
        return api.exec_start(api.exec_create(self.id(), argv, user=self.user)["Id"]).decode(errors="replace")

    def mark_services(self, processes: str) -> None:
        """``processes`` ("pid:start ...", as ``docker.LISTING`` prints them) are pre_run's services and the
        container's own: kept, with what they start, when what the agent left ends."""
        self._write_state((self._state() or {}) | {"services": processes})

    def services(self) -> str:
        return str((self._state() or {}).get("services", ""))

    def oom_killed(self) -> bool:
        """Did its memory cgroup OOM-kill a process since the last check (the count is kept in container.json)?"""
        state = self._state() or {}
        done = client().api.exec_start(client().api.exec_create(state["id"], _OOM_COMMAND, user=self.user)["Id"])
        kills = sum(int(n) for n in _OOM_COUNTER.findall(done.decode(errors="replace")))
        seen = state.get("oom_kills", 0)
        self._write_state(state | {"oom_kills": kills})
        return bool(kills > seen)

    def _state(self) -> dict[str, Any] | None:
        path = self.folder / CONTAINER_FILE
        try:
            found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return found
        except (OSError, ValueError):
            return None

    def _write_state(self, state: dict[str, Any]) -> None:
        (self.folder / CONTAINER_FILE).write_text(json.dumps(state), encoding="utf-8")

    def _start(self) -> str:
        sweep_orphans()
        require_image(self.image)
        self.sandbox.mkdir(parents=True, exist_ok=True)
        self.io_dir.mkdir(exist_ok=True)
        mounts = {self.sandbox: (SANDBOX_PATH, "rw"), self.io_dir: (IO_PATH, "rw")}
        if self.uv_cache is not None:
            self.uv_cache.mkdir(parents=True, exist_ok=True)
            mounts[self.uv_cache] = (self.uv_cache, "rw")
        if os.geteuid() == 0:
            _private_to_root(self.folder, self.uv_cache)
            for folder in mounts:
                _chown_tree(folder, IMAGE_UID)
        volumes = {str(path): {"bind": str(inside), "mode": mode} for path, (inside, mode) in mounts.items()}
        volumes |= {str(path): {"bind": str(path), "mode": "ro"} for path in agent_cli_folders()}
        if HOST_CA_BUNDLE.is_file():
            volumes[str(HOST_CA_BUNDLE)] = {"bind": CONTAINER_CA_BUNDLE, "mode": "ro"}
        network = self.config.network
        container = client().containers.create(
            self.image,
            [],
            entrypoint=["sleep", "infinity"],  # pinned, not the image's: one of its own would take it as arguments
            init=True,  # reaps orphans: zombies would count against the pids limit
            user=KEEPER_USER,  # every command runs as ``self.user``, which cannot signal it (no capabilities)
            working_dir=str(SANDBOX_PATH),
            network_mode=network if isinstance(network, str) else "bridge" if self.forwarded is None else "none",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            volumes=volumes,
            labels=self._labels(),
            **self._limits(),
        )
        _register_for_exit(self.interrupt)
        with _mine_lock:
            _mine.add(str(container.id))
        scorer = {"scorer": owner_label()} if self.scoring else {}
        self._write_state({"id": container.id, "image": self.image, **scorer})
        container.start()
        self._make_sweep_shell(str(container.id))
        if self.forwarded is not None:
            self.forward(self.forwarded)
        return str(container.id)

    def _make_sweep_shell(self, container: str) -> None:
        api = client().api
        exec_id = api.exec_create(container, ["/bin/sh", "-c", _MAKE_SWEEP_SHELL], user="0")["Id"]
        api.exec_start(exec_id)
        if api.exec_inspect(exec_id)["ExitCode"] != 0:  # (a read-only image): its /bin/sh, which a process can trace
            log.warning("%s: no private shell for the sweeps in image %s", self.folder, self.image)
            self._write_state((self._state() or {}) | {"sweep_shell": "/bin/sh"})

    def sweep_shell(self) -> str:
        return str((self._state() or {}).get("sweep_shell", SWEEP_SHELL))

    def _labels(self) -> dict[str, str]:
        named = {f"{LABEL}.{key}": value for key, value in self.labels.items()}
        return {LABEL: "sandbox", LABEL_OWNER: owner_label(), LABEL_FOLDER: str(self.folder), **named}

    def _limits(self) -> dict[str, Any]:
        """``sandbox.limits`` as engine settings: memory without extra swap, CPUs, pids."""
        limits = self.config.limits
        kwargs: dict[str, Any] = {}
        if limits.max_memory_mb is not None:
            kwargs["mem_limit"] = kwargs["memswap_limit"] = f"{limits.max_memory_mb}m"
        if limits.max_cpus is not None:
            kwargs["nano_cpus"] = int(limits.max_cpus * 1e9)
        if limits.max_pids is not None:
            kwargs["pids_limit"] = limits.max_pids
        return kwargs


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


def _private_to_root(evaluation: Path, uv_cache: Path | None) -> None:
    """The folders holding what is handed to the container's user, root's alone: a host account may share that
    uid, and would otherwise walk into the sandbox (a rescore's, whose evaluation folder the first run opened) to
    change what is graded, or swap its folders for links while root walks it; or plant packages in the cache."""
    if is_replicate_folder(evaluation):  # a run's <NN>; `evaluate --run-dir`'s folder is the user's own
        os.chmod(evaluation, 0o700)
    if uv_cache is not None:
        os.chmod(uv_cache.parent, 0o700)


def _chown_tree(top: Path, uid: int) -> None:
    """Hand a folder to the container's user (the harness runs as root; the container never does).

    A folder it already owns is left alone: what is inside was made by the container (the uv cache,
    a sandbox whose container is started again).
    """
    if top.stat().st_uid == uid:
        return
    os.lchown(top, uid, uid)
    for folder, names, files in walk(top):  # iterative: an agent's thousand nested folders overflow os.walk
        for name in names + files:
            os.lchown(os.path.join(folder, name), uid, uid)


def remove_own_containers(interrupt: Interrupt | None = None) -> None:
    """Remove every sandbox container this process created and did not close: at the exit of an interrupted run,
    and (``interrupt`` None) at the end of a CLI run, which is this one process (one whose step failed left
    its evaluations' containers running until the next docker run swept them).

    Else not: a process that runs one stage of a run (a Dagster step) leaves its
    containers to the evaluations' later stages, which may run in another process.
    """
    if interrupt is not None and not interrupt.is_set():
        return
    with _mine_lock:
        started = list(_mine)
        _mine.clear()
    for container_id in started:  # by id: in a container every process has its owner label (another run's too)
        with contextlib.suppress(Exception):
            remove_container(container_id)


@functools.cache
def _register_for_exit(interrupt: Interrupt) -> None:
    atexit.register(remove_own_containers, interrupt)
