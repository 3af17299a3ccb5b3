"""Shell commands with a timeout that kills the whole process group."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from ..files import UnreadableFile, open_regular, universal_newlines
from ..models.results import CommandRun
from ..secrets import redact
from .containment import release_all
from .pidwait import readable_within, wait_for
from .spawner import Spawned, Spawner, SpawnError

OUTPUT_CAP_BYTES = 100 * 1024  # per stream: the first and the last half are kept
CAPPED_MARK = f"bytes omitted: output capped at {OUTPUT_CAP_BYTES // 1024} KB"  # in the middle of capped output
# Once the shell has exited, how long its output may still take to arrive (a
# background daemon holds the pipe open: it is read on, and dropped, until it ends).
DRAIN_GRACE_S = 0.2
POLL_S = 0.05  # without pidfds (old kernels): how often the exit is checked
INTERRUPTED_ERROR = "not started: the run was interrupted"


class HeadTail:
    """Bytes kept up to a cap: the first and the last half, the rest only counted."""

    def __init__(self, cap: int = OUTPUT_CAP_BYTES):
        self.half = cap // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def keep(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        self.head += chunk[:room]
        self.tail += chunk[room:]
        del self.tail[: -self.half]

    def render(self) -> str:
        omitted = self.total - len(self.head) - len(self.tail)
        head, tail = bytes(self.head), bytes(self.tail)
        if omitted <= 0:
            return (head + tail).decode("utf-8", errors="replace")
        room = len(capped_marker(omitted)) + 1  # the marker takes its place from the tail (its count may grow a digit)
        tail, omitted = tail[room:], omitted + room
        return head.decode("utf-8", errors="ignore") + capped_marker(omitted) + tail.decode("utf-8", errors="ignore")


def capped_marker(omitted: int) -> str:
    """What stands for the bytes a capped stream left out: within the cap, as the guide's "truncated to 100KB"."""
    return f"\n[... {omitted} {CAPPED_MARK} ...]\n"


def as_text_mode(run: CommandRun) -> CommandRun:
    """``run`` with its output as a criterion reads a command's (coder_eval's ``Sandbox.run_command`` is
    ``subprocess.run(text=True)``: universal newlines, each ``\\r\\n`` and lone ``\\r`` a ``\\n``). Only for what a
    criterion checks (``run_command``'s stdout and stderr): a pre_run or post_run command's recorded output and an
    agent's own commands keep their bytes, as coder_eval keeps them."""
    stdout, stderr = universal_newlines(run.stdout), universal_newlines(run.stderr)
    if stdout is run.stdout and stderr is run.stderr:
        return run
    return run.model_copy(update={"stdout": stdout, "stderr": stderr})


class ReplacedCapture(OSError):
    """A command's output file that is no longer the regular file its command wrote (a link, a FIFO...)."""


def read_capped(path: Path) -> str:
    """A command's output file's text, capped like a command's output (the docker driver's commands write to
    files, in a folder the container can write too): never through a link (a process left in the container could
    point it at a host file the harness would read) and never blocking (a FIFO put in its place); "" when the
    command wrote none."""
    try:
        fd = open_regular(path, follow=False)
    except FileNotFoundError:
        return ""
    except UnreadableFile:
        raise ReplacedCapture(f"{path.name} was replaced by something that is not a file") from None
    except OSError as exc:  # ELOOP: a symbolic link
        raise ReplacedCapture(f"{path.name} was replaced ({exc.strerror})") from None
    try:
        return _head_and_tail(fd).render()
    finally:
        os.close(fd)


def _head_and_tail(fd: int) -> HeadTail:
    """The first and last halves of the cap of the file open at ``fd``, read where they are: a process left in the
    container could grow the file (a sparse petabyte) faster than it could be read through."""
    kept = HeadTail()
    size = os.fstat(fd).st_size
    if size <= 2 * kept.half:
        kept.keep(os.pread(fd, size, 0))
        return kept
    kept.keep(os.pread(fd, kept.half, 0))
    kept.keep(os.pread(fd, kept.half, size - kept.half))
    kept.total = size  # what lies between, counted
    return kept


class _Drain(threading.Thread):
    """Reads pipes a background process still holds after its command returned, dropping what comes."""

    def __init__(self, fds: list[int]):
        super().__init__(daemon=True, name="coder-eval-drain")
        self.fds = fds

    def run(self) -> None:
        poller = select.poll()
        for fd in self.fds:
            poller.register(fd, select.POLLIN)
        open_fds = set(self.fds)
        while open_fds:
            for fd, _ in poller.poll():
                if not os.read(fd, 65536):
                    poller.unregister(fd)
                    os.close(fd)
                    open_fds.discard(fd)


def _collect(process: subprocess.Popen[bytes] | Spawned, timeout: float) -> tuple[HeadTail, HeadTail, bool]:
    """Both output streams and the exit, in the calling thread: (stdout, stderr, timed out).

    One poll over the two pipes and what tells the exit (the process's pidfd,
    or the spawner's socket): no reader thread per stream. Once the shell has
    exited, output may still arrive for ``DRAIN_GRACE_S``; a background daemon
    that keeps a pipe open is read on (and dropped) by a :class:`_Drain` until
    it ends, so it never blocks on a full pipe. On timeout the whole process
    group is killed.
    """
    assert process.stdout is not None and process.stderr is not None
    out, err = HeadTail(), HeadTail()
    streams = {process.stdout.fileno(): out, process.stderr.fileno(): err}
    poller = select.poll()
    for fd in streams:
        poller.register(fd, select.POLLIN)
    exit_fd, owned = _exit_watch(process)
    if exit_fd is not None:
        poller.register(exit_fd, select.POLLIN)
    deadline, timed_out = time.monotonic() + timeout, False
    until = deadline  # then, once the shell has exited: the end of the grace for its output
    try:
        while streams and (now := time.monotonic()) < until:
            wait_s = until - now if exit_fd is not None else min(until - now, POLL_S)
            for fd, _ in poller.poll(max(1, int(wait_s * 1000))):
                if fd == exit_fd:
                    poller.unregister(fd)
                    until = time.monotonic() + DRAIN_GRACE_S
                elif chunk := os.read(fd, 65536):
                    streams[fd].keep(chunk)
                else:
                    poller.unregister(fd)
                    del streams[fd]
            if exit_fd is None and until == deadline and process.poll() is not None:
                until = time.monotonic() + DRAIN_GRACE_S
        if until == deadline and not _exits_within(process, exit_fd, deadline - time.monotonic()):
            timed_out = True
            kill_group(process.pid)
        process.wait()
    finally:
        if owned and exit_fd is not None:  # (owned: a pidfd we opened)
            os.close(exit_fd)
    if streams:  # a background process holds them: read on, elsewhere
        _Drain([os.dup(fd) for fd in streams]).start()
    return out, err, timed_out


def _exit_watch(process: subprocess.Popen[bytes] | Spawned) -> tuple[int | None, bool]:
    """A descriptor that becomes readable when the command exits, and whether it is ours to close.

    A spawned command is reaped by its spawner at once (its pid may then be
    reused): its exit is the spawner's message, not a pidfd.
    """
    if isinstance(process, Spawned):
        return process.spawner.socket.fileno(), False
    try:
        return os.pidfd_open(process.pid), True
    except OSError:  # a kernel without pidfds
        return None, False


def _exits_within(process: subprocess.Popen[bytes] | Spawned, exit_fd: int | None, timeout: float) -> bool:
    if exit_fd is None:  # no pidfd: a Popen (a spawned command's exit is always its spawner's socket)
        return wait_for(cast("subprocess.Popen[bytes]", process), max(0.0, timeout))
    return readable_within(exit_fd, timeout)


class Interrupt:
    """A run's interrupt flag, and the process groups of its commands running now.

    Raised (Ctrl-C, a terminated Dagster step), it stops them at once instead
    of waiting for them, ends every evaluation's processes, and no new command
    starts. It travels in the run context to every sandbox of the run.
    """

    def __init__(self) -> None:
        self._raised = threading.Event()
        self._running: set[int] = set()
        self._lock = threading.Lock()

    def is_set(self) -> bool:
        return self._raised.is_set()

    def raise_now(self) -> None:
        with self._lock:
            self._raised.set()
            groups = list(self._running)
        for pgid in groups:
            kill_group(pgid)
        release_all()

    def start(self, begin: Callable[[], subprocess.Popen[bytes] | Spawned]) -> subprocess.Popen[bytes] | Spawned | None:
        """``begin()`` a command and track its group, as one step: an interruption either sees it or stops it
        starting (None)."""
        with self._lock:
            if self._raised.is_set():
                return None
            process = begin()
            self._running.add(process.pid)
            return process

    def finished(self, pid: int) -> None:
        with self._lock:
            self._running.discard(pid)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_group(
    argv: list[str], timeout: float, env: dict[str, str] | None = None, interrupt: Interrupt | None = None
) -> subprocess.CompletedProcess[str]:
    """A host-side helper (git, an image build step) in a process group of its own, as ``subprocess.run`` with
    text output: at its timeout the whole group is killed (a git clone's remote helpers outlived a plain kill)
    and ``TimeoutExpired`` raised; the run's ``interrupt`` stops it at once (exit -9)."""

    def begin() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    process = interrupt.start(begin) if interrupt is not None else begin()
    if process is None:
        return subprocess.CompletedProcess(argv, -signal.SIGKILL, "", INTERRUPTED_ERROR)
    assert isinstance(process, subprocess.Popen)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(process.pid)
        process.communicate()
        raise
    finally:
        if interrupt is not None:
            interrupt.finished(process.pid)
    return subprocess.CompletedProcess(
        argv, process.returncode, out.decode(errors="replace"), err.decode(errors="replace")
    )


def run_shell(
    command: str,
    cwd: Path,
    timeout: float,
    interrupt: Interrupt,
    env: dict[str, str] | None = None,
    launcher: Sequence[str] | Spawner = (),
) -> CommandRun:
    """Run ``command`` with ``/bin/sh -c`` in its own process group in ``cwd`` (as the command sees it), through
    ``launcher`` (into a namespace: an argv prefix, which says the folder itself, or the namespace's spawner);
    none starts once the run's ``interrupt`` is raised.

    Output is read from pipes as it comes, capped in memory (nothing goes to
    disk). A command that starts a background daemon (``server &``) returns
    as soon as the shell exits; the daemon lives on until its evaluation ends
    (see ``containment``). On timeout the whole group is killed.
    """
    start = time.perf_counter()
    argv = ["/bin/sh", "-c", command]

    def begin() -> subprocess.Popen[bytes] | Spawned:
        if isinstance(launcher, Spawner):
            return launcher.spawn(argv, cwd, env)
        return subprocess.Popen(
            [*launcher, *argv],
            cwd=None if launcher else cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    try:
        process = interrupt.start(begin)
    except (OSError, ValueError, SpawnError) as exc:  # ValueError: a NUL character in the command
        return CommandRun(command=command, error=f"could not start: {exc}")
    if process is None:
        return CommandRun(command=command, error=INTERRUPTED_ERROR)
    try:
        out, err, timed_out = _collect(process, timeout)
    except SpawnError as exc:  # the spawner died under the command: end it, report what happened
        kill_group(process.pid)
        return CommandRun(command=command, error=f"lost track of the command: {exc}")
    finally:
        interrupt.finished(process.pid)
        for stream in (process.stdout, process.stderr):
            if stream is not None:  # (always: both are pipes)
                stream.close()
    return CommandRun(
        command=command,
        exit_code=None if timed_out else process.returncode,
        stdout=redact(out.render()),
        stderr=redact(err.render()),
        duration_s=round(time.perf_counter() - start, 3),
        timed_out=timed_out,
        error=timed_out_error(timeout) if timed_out else None,
    )


def timed_out_error(timeout: float) -> str:
    """A command's error at its timeout, the same under every driver."""
    return f"timed out after {timeout:g} s (process group killed)"
