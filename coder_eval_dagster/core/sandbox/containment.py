"""One set of namespaces per evaluation, so that no process it started outlives it, reaches the harness, sees
the host's files or reaches the network beyond what its task allows.

Every sandbox command and agent CLI of an evaluation runs inside the same
user, PID and mount namespaces and, when its network is confined, a network
namespace (``unshare``): an agent CLI enters them with ``nsenter``, a
command through the namespace's spawner (see ``spawner``). The namespace's
first process, its holder (``holder``), builds what the commands see of the
file system (the system folders read-only, the evaluation's sandbox at
``/sandbox``, a private ``/tmp``) and is the namespace's init: when it dies
the kernel kills every process inside, ``setsid`` daemons and double forks
included.
The holder dies when

- the evaluation ends (:func:`release`, keyed by the evaluation's folder, so
  a process other than the one that started the namespace can end it too);
- the run is interrupted (:func:`release_all`);
- the harness dies, even by ``kill -9``: the holder reads a socket only the
  harness holds the other end of, and its end of file is the harness's death.
  (A socket rather than ``PR_SET_PDEATHSIG``, which fires when the *thread*
  that started the child ends, and Dagster starts commands from pool threads.)

A namespace in which nothing is left running when its evaluation (or phase)
lets go of it goes back to a small pool and serves the next evaluation: starting
one costs two processes (the holder is a Python program), and a large run would
otherwise start two per row. The next evaluation to take it has its own
sandbox mounted and a fresh ``/tmp``; one with a process still running is
ended, never reused. The pool lives as long as the run (its run context ends it,
:func:`end_spare`), so a run's scoring step reuses what its sandbox step let go
of; the CLI fills it while it imports Dagster (:func:`prewarm`).

Inside, ``/proc`` is the namespace's own: the harness is not even visible.
Commands run as root of the user namespace (mapped to the user coder-eval
runs as, so files keep their usual rights) without ``CAP_SYS_ADMIN`` and
``CAP_SYS_PTRACE``: they cannot change what they see of the file system,
and root of their own user namespace gives them no privilege over any
process outside it: the harness's environment and memory cannot be read,
nor the harness signalled.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..layout import NAMESPACE_FILE
from ..model_proxy import shared_proxy
from . import egress
from .egress import Gate, Handler
from .holder import SANDBOX_PATH, Holder, HolderError, SandboxUnavailable, holder_argv
from .pidwait import wait_for
from .spawner import Spawner

START_TIMEOUT_S = 10.0
END_TIMEOUT_S = 10.0
REPLY_TIMEOUT_S = 10.0  # the holder answers at once; a silent one is broken
# A run keeps every evaluation between its stages. Beyond this many namespaces, starting one first
# lets go of the idle ones (nothing but their init left, no command running, no agent: back to the
# spares, or ended), so that a large run does not hold a namespace per evaluation; a later command
# takes one again.
SWEEP_ABOVE = 32
# A namespace gets a spawner (see ``spawner``) at its command after this many: starting one costs
# ~12 ms, and it saves ~2.4 ms (nsenter and setpriv) per command; namespaces are reused, so a large
# run's get one early, while a run of a few rows never pays for it.
SPAWNER_AFTER = 8
# Whatever an agent CLI or a command starts inside, it cannot trace (or read the memory of) the
# namespace's init or spawner, which keep the capabilities, nor mount, unmount or remount anything
# (what it sees of the file system is the holder's to decide), nor change the namespace's network
# (its addresses, routes and firewall would stay for the next evaluation to reuse it).
# CAP_CHECKPOINT_RESTORE too (by its number, 40: libcap-ng before 0.8, Ubuntu 22.04's, has no name for it): with
# it a process picks its own PID (clone3's set_tid), and could take a pre_run service's PID, which the sweep keeps.
NO_TRACING = ["setpriv", "--bounding-set", "-sys_ptrace,-sys_admin,-net_admin,-cap_40", "--"]
# Idle namespaces kept for the next evaluations, of each kind (each is two processes and a socket).
SPARE_MAX = 16


class ContainmentError(SandboxUnavailable):
    """The namespace could not be created (no unshare, or not allowed here), or could not show the sandbox."""


@dataclass
class _Namespace:
    starter: subprocess.Popen[bytes]  # unshare: in the user and outer mount namespaces; its child, the holder, is init
    holder: Holder
    network: bool  # a network namespace of its own (confined), else the host's network
    gate: Gate | None = None  # the network policy of the evaluation it serves now
    egress: socket.socket | None = None  # the egress proxy's listener inside (network namespaces)
    listeners: dict[int, socket.socket] = field(default_factory=dict)  # the evaluation's: model proxy, forwards
    commands: int = 0  # sandbox commands running in it now
    agent: bool = False  # an agent CLI was started in it: kept until the evaluation ends
    mounts: int = 0  # host folders mounted in it for a while (see mounted): kept until they are unmounted
    spawner: Spawner | None = None  # started at its SPAWNER_AFTER-th command
    spawner_broken: bool = False  # it could not start, or failed: commands enter with nsenter
    commands_run: int = 0  # over every evaluation it served

    def free_spawner(self) -> Spawner | None:
        """Its spawner, locked for one command; None before SPAWNER_AFTER commands, or while another holds it."""
        self.commands_run += 1
        if self.spawner is None and not self.spawner_broken and self.commands_run > SPAWNER_AFTER:
            self.start_spawner()
        if self.spawner is not None and self.spawner.broken:
            self.spawner_broken = True
        if self.spawner is not None and not self.spawner_broken and self.spawner.lock.acquire(blocking=False):
            return self.spawner
        return None

    def start_spawner(self) -> None:
        try:
            self.spawner = Spawner(Path(f"/proc/{self.holder.pid}/ns"), self.network)
        except OSError:
            self.spawner_broken = True

    @functools.cached_property
    def record(self) -> str:
        """What an evaluation's folder says of the namespace serving it (NAMESPACE_FILE), for another process
        to end it: its starter's pid and PID namespace (the same for every evaluation it serves)."""
        pid_namespace = os.readlink(f"/proc/{self.starter.pid}/ns/pid_for_children")
        return f"{self.starter.pid} {pid_namespace}\n"

    def processes(self) -> int:
        """How many processes the namespace holds, its init included (0: it is gone)."""
        return self.holder.processes()

    def in_use(self) -> bool:
        """A command runs in it, an agent was started in it, or a folder is mounted in it for a while: its
        evaluation still needs it, whatever runs in it now."""
        return bool(self.agent or self.commands or self.mounts)

    def listen(self, port: int, handle: Handler) -> None:
        """Accept on the namespace's 127.0.0.1:``port`` (for the evaluation it serves), with ``handle``."""
        if port not in self.listeners:
            self.listeners[port] = self.holder.listen(port)
            egress.acceptor().serve(self.listeners[port], handle)

    def proxy(self, connection: socket.socket) -> None:
        """A client of the egress proxy, under the gate of the evaluation served now (none: nothing passes)."""
        egress.proxy(connection, self.gate or Gate((), (), model=False))

    def forward(self, connection: socket.socket, *, port: int) -> None:
        """A connection to an allowed port of the host's loopback, under the gate of the evaluation served now."""
        egress.forward(connection, self.gate or Gate((), (), model=False), port)


_namespaces: dict[Path, _Namespace] = {}
_spare: dict[bool, list[_Namespace]] = {True: [], False: []}  # by kind: confined network or not
_spare_generation = 0  # moved on by end_spare: a namespace prewarmed for an ended run is not kept
_lock = threading.Lock()


def agent_launcher(
    folder: Path, sandbox: Path, gate: Gate | None, home: Path, read_only: Mapping[Path, Path] | None = None
) -> list[str]:
    """The argv prefix that starts an agent CLI in the namespace of the evaluation in ``folder``: its working
    folder ``sandbox`` (at ``/sandbox``), its ``home`` (under /tmp) at the same path with ``read_only``'s host
    folders read-only at their places in it (an installed CLI the view leaves out), the model proxy reachable
    at its grant's address, and the host loopback ports the gate lets it reach (those granted since the
    namespace was claimed too: the harness's telemetry endpoint)."""
    namespace = _namespace_of(_key(folder), sandbox, gate)
    namespace.agent = True
    home = home.absolute()  # (the holder's working folder is not ours)
    namespace.holder.ask("bind", str(home), str(home))
    for source, target in (read_only or {}).items():
        if not target.is_relative_to(home):
            raise ContainmentError(f"{target} is not in the agent's home {home}")
        namespace.holder.ask("bind", str(source.absolute()), str(target), "ro")
    if gate is not None and gate.model:
        proxy = shared_proxy()
        namespace.listen(proxy.port(), proxy.serve_connection)
    for port in gate.loopback_ports() if gate is not None else []:
        namespace.listen(port, functools.partial(namespace.forward, port=port))
    return _prefix(namespace)


@contextlib.contextmanager
def command_launcher(folder: Path, sandbox: Path, gate: Gate | None) -> Iterator[Spawner | list[str]]:
    """How one sandbox command enters the evaluation's namespace: its spawner, else an ``nsenter`` prefix.

    The namespace is in use until the block ends.
    """
    namespace = _namespace_of(_key(folder), sandbox, gate, command=True)
    spawner = namespace.free_spawner()
    try:
        yield spawner if spawner is not None else _prefix(namespace)
    finally:
        if spawner is not None:
            spawner.lock.release()
        with _lock:
            namespace.commands -= 1


@contextlib.contextmanager
def mounted(
    folder: Path, sandbox: Path, gate: Gate | None, source: Path, target: Path, read_only: bool = False
) -> Iterator[None]:
    """The host folder ``source`` at ``target`` (under /tmp) in the evaluation's namespace, for the block.

    The namespace is kept meanwhile, even with nothing running in it: a
    command of the block's must find the folder there.
    """
    namespace = _namespace_of(_key(folder), sandbox, gate)
    with _lock:
        namespace.mounts += 1
    try:
        mode = ["ro"] if read_only else []
        namespace.holder.ask("bind", str(source.absolute()), str(target), *mode)  # (the holder's folder is not ours)
        yield
    finally:
        with _lock:
            namespace.mounts -= 1
        with contextlib.suppress(HolderError):  # the namespace ended meanwhile (an interrupt): nothing to undo
            namespace.holder.ask("unbind", str(target))


def _key(folder: Path) -> Path:
    """An evaluation's folder as the namespaces are keyed: absolute, without a file system walk (resolve())."""
    return Path(os.path.abspath(folder))


# What the kernel's ENOSPC / EPERM from unshare means for a user: the settings that refuse user namespaces.
USER_NAMESPACES_REFUSED = (
    "this user may not create user namespaces: see user.max_user_namespaces, kernel.unprivileged_userns_clone and, "
    "on Ubuntu 23.10 and later, kernel.apparmor_restrict_unprivileged_userns (docs/running.md, Security model)"
)


def _prefix(namespace: _Namespace) -> list[str]:
    """``nsenter`` into the namespace, then ``setpriv`` (what it starts cannot trace the namespace's init, nor
    change its mounts), then into ``/sandbox`` (``nsenter --wd`` opens its folder before entering).

    ``--preserve-credentials``: the harness's user is the namespace's root already (``--map-root-user``), and
    nsenter's own ``setgroups`` is refused in a namespace an unprivileged user made (its setgroups is ``deny``):
    run as a non-root user, every command entered this way failed (the spawner's ``setns`` never called it).
    """
    ns = f"/proc/{namespace.holder.pid}/ns"
    network = [f"--net={ns}/net"] if namespace.network else []
    return [
        "nsenter",
        "--preserve-credentials",
        f"--user={ns}/user",
        f"--pid={ns}/pid",
        f"--mount={ns}/mnt",
        f"--ipc={ns}/ipc",
        f"--uts={ns}/uts",
        *network,
        "--",
        *NO_TRACING,
        "env",
        f"--chdir={SANDBOX_PATH}",
    ]


def _namespace_of(folder: Path, sandbox: Path, gate: Gate | None, command: bool = False) -> _Namespace:
    """The evaluation's namespace, started (or taken from the spares) on first use, its sandbox shown.

    Started outside the global lock (the holder's start is the slow part): one
    evaluation's stages run one after another on one thread, so only
    different folders meet here.
    """
    with _lock:
        namespace = _namespaces.get(folder)
        if namespace is not None and namespace.starter.poll() is None:
            namespace.commands += command
            namespace.gate = gate
            return namespace
    network = gate is not None
    namespace = _take_spare(network) or _start(network)
    _claim(folder, namespace, sandbox, gate)
    namespace.commands += command
    with _lock:
        _namespaces[folder] = namespace
        crowded = [(f, n) for f, n in _namespaces.items() if f != folder] if len(_namespaces) > SWEEP_ABOVE else []
    for other, candidate in crowded:
        _end_if_idle(other, candidate)
    return namespace


def _end_if_idle(folder: Path, namespace: _Namespace) -> None:
    """Let go of a namespace with nothing but its init left, no command running and no agent."""
    if namespace.in_use() or (processes := namespace.processes()) > 1:
        return
    with _lock:
        if _namespaces.get(folder) is not namespace or namespace.in_use():
            return
        del _namespaces[folder]
    _forget(folder)
    _recycle(namespace, processes)


def mark_services(folder: Path) -> None:
    """The end of pre_run: what runs in the evaluation's namespace now is the task's services, kept into scoring."""
    _ask_held(folder, "mark")


def end_leftovers(folder: Path) -> bool:
    """Before each criterion: every process the agent's phase, or the last criterion's command, left running ends
    (a daemon could trace the next command, or write into the pipe the harness reads its output from); pre_run's
    services and their children stay. Processes that keep forking faster than they are ended end with the whole
    namespace, services too (False)."""
    if _ask_held(folder, "sweep"):
        return True
    release(folder)
    return False


def _ask_held(folder: Path, request: str) -> bool:
    """A request to the namespace the evaluation holds now, if it holds one (none: nothing of its runs); False when
    the holder refused it or is gone."""
    with _lock:
        namespace = _namespaces.get(_key(folder))
    if namespace is None:
        return True
    try:
        namespace.holder.ask(request)
    except HolderError:
        return False
    return True


def release_if_idle(folder: Path) -> None:
    """Between an evaluation's phases: end its namespace now if nothing is left running in it.

    An evaluation whose commands left no background process then holds no
    namespace while it waits for the next phase; one that did keeps it.
    """
    folder = _key(folder)
    with _lock:
        namespace = _namespaces.get(folder)
    if namespace is not None:
        _end_if_idle(folder, namespace)


def _start(network: bool) -> _Namespace:
    """Start the holder in new user, PID, mount (and network) namespaces, and wait until its view is built."""
    control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    argv = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child=SIGKILL", "--mount", "--ipc"]
    argv += ["--uts"]  # the host name and SysV IPC are the namespace's own (the holder clears IPC at each claim)
    argv += ["--net"] if network else []
    try:
        starter = subprocess.Popen(
            [*argv, "--", *holder_argv(network)],
            stdin=theirs.fileno(),  # the holder's control socket: only the harness holds the other end
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C in the terminal reaches the harness, which ends it
            env={"PATH": os.environ.get("PATH", os.defpath)},  # nothing of the harness's environment
        )
    except OSError as exc:
        control.close()
        raise ContainmentError(f"cannot start a process namespace: {exc}") from None
    finally:
        theirs.close()
    assert starter.stderr is not None
    control.settimeout(START_TIMEOUT_S)
    try:
        ready = control.recv(64)
    except OSError:
        ready = b""
    if ready != b"ready":
        control.close()
        starter.kill()
        why = starter.stderr.read().decode(errors="replace").strip() if starter.wait() else "timed out"
        if "unshare failed" in why and ("No space left" in why or "Operation not permitted" in why):
            why += f" ({USER_NAMESPACES_REFUSED})"
        raise ContainmentError(f"cannot start a process namespace: {why or 'timed out'}")
    starter.stderr.close()
    control.settimeout(REPLY_TIMEOUT_S)
    namespace = _Namespace(starter, Holder(control, starter), network)
    if network:
        namespace.egress = namespace.holder.listen(egress.EGRESS_PORT)
        egress.acceptor().serve(namespace.egress, namespace.proxy)
    return namespace


def _claim(folder: Path, namespace: _Namespace, sandbox: Path, gate: Gate | None) -> None:
    """The namespace serves the evaluation in ``folder`` now: its sandbox at ``/sandbox``, its gate, the host's
    loopback ports it allows; said in its folder, for another process to end it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / NAMESPACE_FILE).write_text(namespace.record, encoding="utf-8")
    namespace.gate = gate
    try:
        namespace.holder.ask("claim", os.path.abspath(sandbox))
        for port in gate.loopback_ports() if gate is not None else []:
            namespace.listen(port, functools.partial(namespace.forward, port=port))
    except HolderError as exc:
        _forget(folder)
        _end(namespace)
        raise ContainmentError(f"cannot show the sandbox {sandbox} to its commands: {exc}") from None


def _take_spare(network: bool) -> _Namespace | None:
    while True:
        with _lock:
            if not _spare[network]:
                return None
            namespace = _spare[network].pop()
        if namespace.starter.poll() is None:
            return namespace
        _end(namespace)  # ended from outside meanwhile: reap it


def _recycle(namespace: _Namespace, processes: int | None = None) -> None:
    """Keep a namespace its evaluation let go of for the next one, when nothing is left running in it and there
    is room (no listener of the evaluation's left; the next one to take it gets a fresh /tmp).

    ``processes``: how many it holds, when the caller has just asked.
    """
    namespace.commands, namespace.agent, namespace.mounts, namespace.gate = 0, False, 0, None
    _stop_listeners(namespace)
    if namespace.starter.poll() is None and (namespace.processes() if processes is None else processes) == 1:
        try:
            namespace.holder.ask("scrub")  # the keys it left: a keyring it locked cannot be, and it is not kept
        except HolderError:
            _end(namespace)
            return
        with _lock:
            if len(_spare[namespace.network]) < SPARE_MAX:
                _spare[namespace.network].append(namespace)
                return
    _end(namespace)


def prewarm(wanted: Mapping[bool, int]) -> threading.Thread:
    """Start ``wanted[kind]`` namespaces of each kind (confined network or not) into the spares, one after
    another on a background thread: the CLI calls it before importing Dagster, so that the holders start on
    the other core meanwhile and the first evaluations take a ready namespace (eight started with the first
    commands cost a 40-row run ~0.4 s). Each gets its spawner at once too (at no cost to the run then: its
    first commands skip ``nsenter``). A namespace that cannot start stops it: the evaluation that needs one
    says why."""
    generation = _spare_generation

    def fill() -> None:
        for network, count in wanted.items():
            for _ in range(min(count, SPARE_MAX)):
                try:
                    namespace = _start(network)
                except ContainmentError:
                    return
                namespace.start_spawner()
                with _lock:
                    kept = generation == _spare_generation and len(_spare[network]) < SPARE_MAX
                    if kept:
                        _spare[network].append(namespace)
                if not kept:
                    _end(namespace)
                    return

    thread = threading.Thread(target=fill, name="coder-eval-prewarm", daemon=True)
    thread.start()
    return thread


def _stop_listeners(namespace: _Namespace) -> None:
    listeners, namespace.listeners = list(namespace.listeners.values()), {}
    for listener in listeners:
        egress.acceptor().stop(listener)


def end_spare() -> None:
    """End the idle namespaces kept for reuse (the run is over in this process)."""
    global _spare_generation
    with _lock:
        _spare_generation += 1
        spare = [namespace for kind in _spare.values() for namespace in kind]
        for kind in _spare.values():
            kind.clear()
    for namespace in spare:  # every holder told first: the kernel tears their namespaces down side by side
        namespace.holder.close()
    for namespace in spare:
        _end(namespace)


def release(folder: Path) -> None:
    """End of an evaluation: kill every process it started (from any process of the harness)."""
    folder = _key(folder)
    with _lock:
        namespace = _namespaces.pop(folder, None)
    if namespace is not None:
        _forget(folder)
        _recycle(namespace)
    else:
        _end_recorded(folder)
        _forget(folder)


def _forget(folder: Path) -> None:
    """The folder no longer names a namespace: its record emptied, not deleted. Two claims a row each deleting a
    file leave ext4 a trail of recently freed inodes that every later file creation scans past (its
    ``recently_deleted``): 1,000 rows took 2.8-5.9 s of system time with deletes, 2.5-5.0 s without (7 pairs)."""
    with contextlib.suppress(FileNotFoundError):
        os.truncate(folder / NAMESPACE_FILE, 0)


def release_all() -> None:
    """An interrupted run: end every namespace this process started."""
    with _lock:
        namespaces = [*_namespaces.values(), *(namespace for kind in _spare.values() for namespace in kind)]
        _namespaces.clear()
        for kind in _spare.values():
            kind.clear()
    for namespace in namespaces:
        _end(namespace)


def _end(namespace: _Namespace) -> None:
    """End the holder, and so everyone inside (a command the spawner waits on too), then the spawner."""
    namespace.holder.close()  # the holder reads its end of file and exits (closing twice is a no-op)
    starter = namespace.starter
    if not wait_for(starter, END_TIMEOUT_S):  # unshare returns once the holder, and so everyone inside, is gone
        starter.kill()  # a process inside that will not die (uninterruptible sleep): do not wait for it forever
        starter.wait()
    _stop_listeners(namespace)
    if namespace.egress is not None:
        egress.acceptor().stop(namespace.egress)
    if namespace.spawner is not None:
        namespace.spawner.close()


def _end_recorded(folder: Path) -> None:
    """Kill the namespace another process started, after checking its pid still names that namespace.

    Killing unshare kills the holder (``--kill-child``), and so everyone inside.
    """
    try:
        starter, namespace = (folder / NAMESPACE_FILE).read_text(encoding="utf-8").split()
        if os.readlink(f"/proc/{starter}/ns/pid_for_children") != namespace:
            return
        os.kill(int(starter), signal.SIGKILL)
    except (OSError, ValueError):
        return  # no namespace, or already gone
    deadline = time.monotonic() + END_TIMEOUT_S
    while _has_members(namespace) and time.monotonic() < deadline:
        time.sleep(0.02)


def _has_members(namespace: str) -> bool:
    """Whether any process is still in the PID namespace (a scan of /proc: only when ending another's)."""
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and os.readlink(entry / "ns" / "pid") == namespace:
                return True
    return False
