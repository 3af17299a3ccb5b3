"""Start an evaluation's commands in its namespaces without an ``nsenter`` per command.

``nsenter`` costs an exec (and its libraries' start-up) and a fork for every
command: about as much CPU again as the command's own shell. A namespace
instead gets one small spawner process: started outside, it enters the user
and mount namespaces and the PID namespace for its children (``setns``), then
starts each command on request (``posix_spawn``) and reports its pid and its
exit status.

Out of the commands' reach:

- it is not a member of the PID namespace (its children are): nothing inside
  can name it to signal or trace it;
- even a command that unmounts its ``/proc`` and sees the host's cannot read
  or write its memory, descriptors or environment: it is not dumpable and its
  memory belongs to the host's user namespace (it was started there), where
  commands have no capability; and commands start without ``CAP_SYS_PTRACE``
  (dropped from the bounding set), so they cannot trace the namespace's init
  either;
- it talks to the harness over a socket pair only the two of them hold, and
  the exit status it reports is the kernel's (``waitpid``).

It ends when the harness closes its end (the namespace ended, or the harness
died).
"""

from __future__ import annotations

import array
import contextlib
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

from .pidwait import wait_for

REPLY_TIMEOUT_S = 10.0  # the spawner answers at once; a silent one is broken
# Runs as ``python -I -S -c SPAWNER coder-eval-spawner <fd>:<kind>...`` (its name in the host's ps; the
# namespaces to enter, the user namespace first), the socket as its stdin. A request: cwd, the argv's length, argv,
# NAME=value..., NUL-separated (no json: the spawner's start-up is paid per namespace).
SPAWNER = r"""
import _socket, array, ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def check(result, what):
    if result != 0:
        sys.exit(what + ": " + os.strerror(ctypes.get_errno()))
# user first (it gives the capabilities the others need); PID: the children we start are born inside
for fd, kind in (map(int, word.split(":")) for word in sys.argv[2:]):
    check(libc.setns(fd, kind), "setns")
    os.close(fd)
check(libc.prctl(24, 19, 0, 0, 0), "PR_CAPBSET_DROP CAP_SYS_PTRACE")  # for every command started
check(libc.prctl(24, 21, 0, 0, 0), "PR_CAPBSET_DROP CAP_SYS_ADMIN")
check(libc.prctl(24, 12, 0, 0, 0), "PR_CAPBSET_DROP CAP_NET_ADMIN")
check(libc.prctl(24, 40, 0, 0, 0), "PR_CAPBSET_DROP CAP_CHECKPOINT_RESTORE")  # no PID of its choosing (clone3)
check(libc.prctl(4, 0, 0, 0, 0), "PR_SET_DUMPABLE")  # after setns, which may set it again
sock = _socket.socket(fileno=os.dup(0))
os.dup2(os.open("/dev/null", os.O_RDONLY), 0)
while True:
    message, ancillary, _, _ = sock.recvmsg(1 << 20, _socket.CMSG_SPACE(8))
    if not message:
        break
    fds = array.array("i")
    for _level, _type, data in ancillary:
        fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    cwd, count, *words = message.split(b"\0")
    argv, env = words[: int(count)], dict(word.split(b"=", 1) for word in words[int(count) :])
    try:
        os.chdir(cwd)  # inherited by the command: posix_spawn has no chdir of its own
        pid = os.posix_spawn(
            argv[0],
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, fds[0], 1),
                (os.POSIX_SPAWN_DUP2, fds[1], 2),
                (os.POSIX_SPAWN_CLOSE, fds[0]),
                (os.POSIX_SPAWN_CLOSE, fds[1]),
            ],
            setsid=True,
            setsigdef=(13, 25),  # SIGPIPE, SIGXFSZ: Python ignores them; a command gets them as a shell does
        )
    except OSError as exc:
        sock.send(b"error %s" % str(exc).encode())
        continue
    finally:
        for fd in fds:
            os.close(fd)
    sock.send(b"pid %d" % pid)
    sock.send(b"exit %d" % os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


class SpawnError(RuntimeError):
    """The spawner is gone or broke its protocol: the namespace cannot take commands this way."""


class Spawned:
    """A command a spawner started: the part of ``subprocess.Popen`` that ``run_shell`` uses."""

    def __init__(self, spawner: Spawner, pid: int, stdout: int, stderr: int):
        self.spawner, self.pid = spawner, pid
        self.returncode: int | None = None
        self.stdout, self.stderr = os.fdopen(stdout, "rb", buffering=0), os.fdopen(stderr, "rb", buffering=0)

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = self.spawner.exit_status()
        return self.returncode

    def poll(self) -> int | None:
        return self.returncode


class Spawner:
    """The spawner of one namespace (see the module docstring); one command at a time."""

    def __init__(self, namespaces: Path, network: bool):
        """``namespaces``: the ``/proc/<pid>/ns`` folder of the namespace's first process; ``network``: enter its
        network namespace too (a confined one)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.lock = threading.Lock()
        self.broken = False  # it failed: the namespace's later commands enter with nsenter
        self.socket = ours
        self.socket.settimeout(REPLY_TIMEOUT_S)
        kinds = {"user": 0x10000000, "mnt": 0x00020000, "pid": 0x20000000, "ipc": 0x08000000, "uts": 0x04000000}
        kinds |= {"net": 0x40000000} if network else {}
        fds = {os.open(namespaces / name, os.O_RDONLY): kind for name, kind in kinds.items()}
        entered = [f"{fd}:{kind}" for fd, kind in fds.items()]
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", SPAWNER, "coder-eval-spawner", *entered],
                stdin=theirs.fileno(),
                pass_fds=list(fds),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env={"PATH": os.environ.get("PATH", os.defpath)},
            )
        finally:
            theirs.close()
            for fd in fds:
                os.close(fd)

    def spawn(self, argv: list[str], cwd: Path, env: dict[str, str] | None) -> Spawned:
        """Start ``argv`` in ``cwd`` (a new session, stdin from /dev/null), its output on two new pipes."""
        variables = [f"{name}={value}" for name, value in (os.environ if env is None else env).items()]
        words = [os.path.abspath(cwd), str(len(argv)), *argv, *variables]
        if any("\0" in word for word in words):
            raise SpawnError("a NUL character in the command, its folder or its environment")
        request = "\0".join(words).encode()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        try:
            self._send(request, [out_write, err_write])
            pid = int(self._reply(b"pid "))
        except (ValueError, SpawnError) as exc:
            os.close(out_read)
            os.close(err_read)
            raise SpawnError(f"the namespace's spawner failed: {exc}") from None
        finally:
            os.close(out_write)
            os.close(err_write)
        return Spawned(self, pid, out_read, err_read)

    def exit_status(self) -> int:
        """The command's exit code (negative: killed by that signal), once it has ended; SpawnError, as for a
        spawner that died, when it was closed meanwhile (its namespace ended under an interrupt)."""
        try:
            self.socket.settimeout(None)  # the command may run long; its exit was already seen when this is asked
        except OSError as exc:  # closed under the waiting thread
            self.broken = True
            raise SpawnError(f"its namespace ended: {exc}") from None
        try:
            return int(self._reply(b"exit "))
        finally:
            with contextlib.suppress(OSError):
                self.socket.settimeout(REPLY_TIMEOUT_S)

    def _send(self, request: bytes, fds: list[int]) -> None:
        try:
            self.socket.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        except OSError as exc:
            self.broken = True
            raise SpawnError(f"cannot reach it: {exc}") from None

    def _reply(self, kind: bytes) -> bytes:
        """The spawner's next message. An ``error`` one is the command's (it could not start); any other
        failure is the spawner's: it is then ``broken``, and the namespace's later commands go without it."""
        try:
            message = self.socket.recv(4096)
        except OSError as exc:
            self.broken = True
            raise SpawnError(f"no reply: {exc}") from None
        if message.startswith(b"error "):
            raise SpawnError(message[6:].decode(errors="replace"))
        if not message.startswith(kind):
            self.broken = True
            raise SpawnError(f"unexpected reply {message[:40]!r}")
        return message[len(kind) :]

    def close(self) -> None:
        """End the spawner (it reads the end of its socket and exits)."""
        self.socket.close()
        if not wait_for(self.process, REPLY_TIMEOUT_S):
            self.process.kill()
            self.process.wait()
