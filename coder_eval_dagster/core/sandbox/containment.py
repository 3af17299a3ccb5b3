"""One set of namespaces per evaluation, so that no process it started outlives it or reaches the harness.

Every sandbox command and agent CLI of an evaluation runs inside the same
user, PID and mount namespaces (``unshare``): an agent CLI enters them with
``nsenter``, a command through the namespace's spawner (see ``spawner``).
The namespace's first process, a small holder, is its init: when it dies the
kernel kills every process inside, ``setsid`` daemons and double forks
included.
The holder dies when

- the evaluation ends (:func:`release`, keyed by the evaluation's folder, so
  a process other than the one that started the namespace can end it too);
- the run is interrupted (:func:`release_all`);
- the harness dies, even by ``kill -9``: the holder reads a pipe only the
  harness holds open, and its end of file is the harness's death. (A pipe
  rather than ``PR_SET_PDEATHSIG``, which fires when the *thread* that
  started the child ends, and Dagster starts commands from pool threads.)

A namespace in which nothing is left running when its evaluation (or phase)
lets go of it goes back to a small pool and serves the next evaluation: starting
one costs two processes, and a large run would otherwise start two per row. It
is reused only when nothing but its init is left in it and its mount table is
the one it started with (commands are root in there and may mount); the pool
is emptied when a step's evaluations are done (:func:`end_spare`).

Inside, ``/proc`` is the namespace's own: the harness is not even visible.
Commands run as root of the user namespace (mapped to the user coder-eval
runs as, so files keep their usual rights), which gives no privilege over
any process outside it: even with that ``/proc`` unmounted, the harness's
environment and memory cannot be read, nor the harness signalled.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..layout import NAMESPACE_FILE
from .pidwait import wait_for
from .spawner import Spawner

START_TIMEOUT_S = 10.0
END_TIMEOUT_S = 10.0
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
# namespace's init or spawner, which keep the capability: a compromised init could hide a process
# from the count that decides whether a namespace is reused.
NO_TRACING = ["setpriv", "--bounding-set", "-sys_ptrace", "--"]
# Idle namespaces kept for the next evaluations (each is two processes and two pipes).
SPARE_MAX = 16
# The namespace's init. bash (unlike dash) reaps every child, orphans included, from its SIGCHLD handler.
# Each line on stdin asks how many processes the namespace holds (its own /proc, globbed without a fork);
# at end of file bash exits and the kernel kills everyone inside.
HOLDER = [
    "bash",
    "--noprofile",
    "--norc",
    "-c",
    "echo ready; while read -r _; do set -- /proc/[0-9]*; echo $#; done",
    "coder-eval-namespace",  # its name in ps
]


class ContainmentError(RuntimeError):
    """The namespace could not be created (no unshare, or not allowed here)."""


@dataclass
class _Namespace:
    starter: subprocess.Popen[bytes]  # unshare: in the user and mount namespaces; its child, the holder, is init
    mounts: str  # its mount table when it started
    commands: int = 0  # sandbox commands running in it now
    agent: bool = False  # an agent CLI was started in it: kept until the evaluation ends
    spawner: Spawner | None = None  # started at its SPAWNER_AFTER-th command
    spawner_broken: bool = False  # it could not start, or failed: commands enter with nsenter
    commands_run: int = 0  # over every evaluation it served

    def free_spawner(self) -> Spawner | None:
        """Its spawner, locked for one command; None before SPAWNER_AFTER commands, or while another holds it."""
        self.commands_run += 1
        if self.spawner is None and not self.spawner_broken and self.commands_run > SPAWNER_AFTER:
            try:
                self.spawner = Spawner(Path(f"/proc/{self.starter.pid}/ns"))
            except OSError:
                self.spawner_broken = True
        if self.spawner is not None and self.spawner.broken:
            self.spawner_broken = True
        if self.spawner is not None and not self.spawner_broken and self.spawner.lock.acquire(blocking=False):
            return self.spawner
        return None

    def reusable(self, processes: int) -> bool:
        """With ``processes`` in it (its init alone) and no mount added or removed: as good as a new one."""
        return processes == 1 and self.mount_table() == self.mounts

    def mount_table(self) -> str:
        try:
            return Path(f"/proc/{self.starter.pid}/mountinfo").read_text(encoding="utf-8")
        except OSError:
            return ""

    def processes(self) -> int:
        """How many processes the namespace holds, its init included (0: it is gone)."""
        assert self.starter.stdin is not None and self.starter.stdout is not None
        try:
            self.starter.stdin.write(b"?\n")
            self.starter.stdin.flush()
            return int(self.starter.stdout.readline() or 0)
        except (OSError, ValueError):
            return 0


_namespaces: dict[Path, _Namespace] = {}
_spare: list[_Namespace] = []
_lock = threading.Lock()


def agent_launcher(folder: Path, cwd: Path) -> list[str]:
    """The argv prefix that starts an agent CLI in the namespace of the evaluation in ``folder``, in ``cwd``."""
    namespace = _namespace_of(_key(folder))
    namespace.agent = True
    return _prefix(namespace, cwd)


@contextlib.contextmanager
def command_launcher(folder: Path, cwd: Path) -> Iterator[Spawner | list[str]]:
    """How one sandbox command enters the evaluation's namespace: its spawner, else an ``nsenter`` prefix.

    The namespace is in use until the block ends.
    """
    namespace = _namespace_of(_key(folder), command=True)
    spawner = namespace.free_spawner()
    try:
        yield spawner if spawner is not None else _prefix(namespace, cwd)
    finally:
        if spawner is not None:
            spawner.lock.release()
        with _lock:
            namespace.commands -= 1


def _key(folder: Path) -> Path:
    """An evaluation's folder as the namespaces are keyed: absolute, without a file system walk (resolve())."""
    return Path(os.path.abspath(folder))


def _prefix(namespace: _Namespace, cwd: Path) -> list[str]:
    """``nsenter`` into the namespace, then ``setpriv``: what it starts cannot trace the namespace's init."""
    ns = f"/proc/{namespace.starter.pid}/ns"
    return [
        "nsenter",
        f"--user={ns}/user",
        f"--pid={ns}/pid_for_children",
        f"--mount={ns}/mnt",
        f"--wd={cwd.resolve()}",
        "--",
        *NO_TRACING,
    ]


def _namespace_of(folder: Path, command: bool = False) -> _Namespace:
    """The evaluation's namespace, started on first use.

    Started outside the global lock (the holder's start is the slow part): one
    evaluation's stages run one after another on one thread, so only
    different folders meet here.
    """
    with _lock:
        namespace = _namespaces.get(folder)
        if namespace is not None and namespace.starter.poll() is None:
            namespace.commands += command
            return namespace
    namespace = _take_spare() or _start()
    _claim(folder, namespace)
    namespace.commands += command
    with _lock:
        _namespaces[folder] = namespace
        crowded = [(f, n) for f, n in _namespaces.items() if f != folder] if len(_namespaces) > SWEEP_ABOVE else []
    for other, candidate in crowded:
        _end_if_idle(other, candidate)
    return namespace


def _end_if_idle(folder: Path, namespace: _Namespace) -> None:
    """Let go of a namespace with nothing but its init left, no command running and no agent."""
    if namespace.agent or namespace.commands or (processes := namespace.processes()) > 1:
        return
    with _lock:
        if _namespaces.get(folder) is not namespace or namespace.commands:
            return
        del _namespaces[folder]
    _forget(folder)
    _recycle(namespace, processes)


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


def _start() -> _Namespace:
    """Start the holder in new user, PID and mount namespaces, and wait until it runs."""
    argv = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child=SIGKILL", "--mount-proc", "--"]
    try:
        starter = subprocess.Popen(
            [*argv, *HOLDER],
            stdin=subprocess.PIPE,  # only the harness holds its write end: the harness's death ends the holder
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C in the terminal reaches the harness, which ends it
            env={"PATH": os.environ.get("PATH", os.defpath)},  # nothing of the harness's environment
        )
    except OSError as exc:
        raise ContainmentError(f"cannot start a process namespace: {exc}") from None
    assert starter.stdout is not None and starter.stderr is not None
    poller = select.poll()
    poller.register(starter.stdout, select.POLLIN)
    if not (poller.poll(START_TIMEOUT_S * 1000) and starter.stdout.readline() == b"ready\n"):
        starter.kill()
        why = starter.stderr.read().decode(errors="replace").strip() if starter.wait() else "timed out"
        raise ContainmentError(f"cannot start a process namespace: {why}")
    starter.stderr.close()
    namespace = _Namespace(starter, mounts="")
    namespace.mounts = namespace.mount_table()
    return namespace


def _claim(folder: Path, namespace: _Namespace) -> None:
    """The namespace serves the evaluation in ``folder`` now: say so there, for another process to end it."""
    folder.mkdir(parents=True, exist_ok=True)
    pid_namespace = os.readlink(f"/proc/{namespace.starter.pid}/ns/pid_for_children")
    (folder / NAMESPACE_FILE).write_text(f"{namespace.starter.pid} {pid_namespace}\n", encoding="utf-8")


def _take_spare() -> _Namespace | None:
    while True:
        with _lock:
            if not _spare:
                return None
            namespace = _spare.pop()
        if namespace.starter.poll() is None:
            return namespace
        _end(namespace)  # ended from outside meanwhile: reap it


def _recycle(namespace: _Namespace, processes: int | None = None) -> None:
    """Keep a namespace its evaluation let go of for the next one, when it is clean and there is room.

    ``processes``: how many it holds, when the caller has just asked.
    """
    namespace.commands, namespace.agent = 0, False
    if namespace.starter.poll() is None and namespace.reusable(
        namespace.processes() if processes is None else processes
    ):
        with _lock:
            if len(_spare) < SPARE_MAX:
                _spare.append(namespace)
                return
    _end(namespace)


def end_spare() -> None:
    """End the idle namespaces kept for reuse (a step's evaluations are done)."""
    with _lock:
        spare = list(_spare)
        _spare.clear()
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
    with contextlib.suppress(FileNotFoundError):
        (folder / NAMESPACE_FILE).unlink()


def release_all() -> None:
    """An interrupted run: end every namespace this process started."""
    with _lock:
        namespaces = [*_namespaces.values(), *_spare]
        _namespaces.clear()
        _spare.clear()
    for namespace in namespaces:
        _end(namespace)


def _end(namespace: _Namespace) -> None:
    """End the holder, and so everyone inside (a command the spawner waits on too), then the spawner."""
    starter = namespace.starter
    for pipe in (starter.stdin, starter.stdout):
        if pipe is None:  # (never: both are pipes)
            continue
        with contextlib.suppress(OSError):
            pipe.close()  # the holder reads its end of file and exits
    if not wait_for(starter, END_TIMEOUT_S):  # unshare returns once the holder, and so everyone inside, is gone
        starter.kill()  # a process inside that will not die (uninterruptible sleep): do not wait for it forever
        starter.wait()
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
