"""Shell commands with a timeout that kills the whole process group."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from ..secrets import redact
from .containment import release_all
from .pidwait import wait_for

OUTPUT_CAP_BYTES = 100 * 1024  # per stream: the first and the last half are kept
# Once the shell has exited, how long its output may still take to arrive (a
# background daemon holds the pipe open: it is read on, and dropped, until it ends).
DRAIN_GRACE_S = 0.2
POLL_S = 0.05  # without pidfds (old kernels): how often the exit is checked
# Process groups of the commands running now, so that an interrupted run can
# stop them at once instead of waiting for them; once interrupted, no new
# command starts in this process.
_running: set[int] = set()
_running_lock = threading.Lock()
INTERRUPTED = threading.Event()


class CommandRun(BaseModel):
    """What one shell command did (output capped, secrets redacted)."""

    command: str
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    timed_out: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None


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
        marker = f"\n[... {omitted} bytes omitted: output capped at {OUTPUT_CAP_BYTES // 1024} KB ...]\n"
        return head.decode("utf-8", errors="ignore") + marker + tail.decode("utf-8", errors="ignore")


def read_capped(path: Path) -> str:
    """A file's text capped like a command's output (the docker driver's commands write to files)."""
    kept = HeadTail()
    with path.open("rb") as handle:
        while chunk := handle.read(65536):
            kept.keep(chunk)
    return kept.render()


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


def _collect(process: subprocess.Popen[bytes], timeout: float) -> tuple[HeadTail, HeadTail, bool]:
    """Both output streams and the exit, in the calling thread: (stdout, stderr, timed out).

    One poll over the two pipes and the process's pidfd: no reader thread per
    stream. Once the shell has exited, output may still arrive for
    ``DRAIN_GRACE_S``; a background daemon that keeps a pipe open is read on
    (and dropped) by a :class:`_Drain` until it ends, so it never blocks on a
    full pipe. On timeout the whole process group is killed.
    """
    assert process.stdout is not None and process.stderr is not None
    out, err = HeadTail(), HeadTail()
    streams = {process.stdout.fileno(): out, process.stderr.fileno(): err}
    poller = select.poll()
    for fd in streams:
        poller.register(fd, select.POLLIN)
    pidfd = _pidfd(process)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    deadline, timed_out = time.monotonic() + timeout, False
    until = deadline  # then, once the shell has exited: the end of the grace for its output
    try:
        while streams and (now := time.monotonic()) < until:
            wait_s = until - now if pidfd is not None else min(until - now, POLL_S)
            for fd, _ in poller.poll(max(1, int(wait_s * 1000))):
                if fd == pidfd:
                    poller.unregister(fd)
                    until = time.monotonic() + DRAIN_GRACE_S
                elif chunk := os.read(fd, 65536):
                    streams[fd].keep(chunk)
                else:
                    poller.unregister(fd)
                    del streams[fd]
            if pidfd is None and until == deadline and process.poll() is not None:
                until = time.monotonic() + DRAIN_GRACE_S
        if until == deadline and not wait_for(process, max(0.0, deadline - time.monotonic())):
            timed_out = True
            kill_group(process.pid)
        process.wait()
    finally:
        if pidfd is not None:
            os.close(pidfd)
    if streams:  # a background process holds them: read on, elsewhere
        _Drain([os.dup(fd) for fd in streams]).start()
    return out, err, timed_out


def _pidfd(process: subprocess.Popen[bytes]) -> int | None:
    try:
        return os.pidfd_open(process.pid)
    except OSError:  # a kernel without pidfds
        return None


def interrupt_all() -> None:
    """Stop every running command's process group and every evaluation's processes now, and start no new one."""
    with _running_lock:
        INTERRUPTED.set()
        groups = list(_running)
    for pgid in groups:
        kill_group(pgid)
    release_all()


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_shell(
    command: str, cwd: Path, timeout: float, env: dict[str, str] | None = None, launcher: Sequence[str] = ()
) -> CommandRun:
    """Run ``command`` with ``/bin/sh -c`` (through ``launcher``, e.g. into a namespace) in its own process group.

    Output is read from pipes as it comes, capped in memory (nothing goes to
    disk). A command that starts a background daemon (``server &``) returns
    as soon as the shell exits; the daemon lives on until its evaluation ends
    (see ``containment``). On timeout the whole group is killed.
    """
    start = time.perf_counter()
    # check, start and register as one step: an interruption either sees this command or stops it starting
    with _running_lock:
        if INTERRUPTED.is_set():
            return CommandRun(command=command, error="not started: the run was interrupted")
        try:
            process = subprocess.Popen(
                [*launcher, "/bin/sh", "-c", command],
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            return CommandRun(command=command, error=f"could not start: {exc}")
            _running.add(process.pid)
    try:
        out, err, timed_out = _collect(process, timeout)
    finally:
        with _running_lock:
            _running.discard(process.pid)
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]
    return CommandRun(
        command=command,
        exit_code=None if timed_out else process.returncode,
        stdout=redact(out.render()),
        stderr=redact(err.render()),
        duration_s=round(time.perf_counter() - start, 3),
        timed_out=timed_out,
        error=f"timed out after {timeout:g} s (process group killed)" if timed_out else None,
    )
