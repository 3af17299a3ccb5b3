"""Shell commands with a timeout that kills the whole process group."""

from __future__ import annotations

import contextlib
import os
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


class CappedStream(HeadTail):
    """A pipe read to its end in a thread, keeping its first and last bytes and counting the rest."""

    def __init__(self, fd: int, cap: int = OUTPUT_CAP_BYTES):
        super().__init__(cap)
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(fd,), daemon=True, name="coder-eval-output")
        self._thread.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                with self._lock:
                    self.keep(chunk)

    def text(self, grace: float = DRAIN_GRACE_S) -> str:
        """What was written so far (waiting ``grace`` seconds for the end of the stream)."""
        self._thread.join(grace)
        with self._lock:
            return self.render()


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
    assert process.stdout is not None and process.stderr is not None
    out, err = CappedStream(os.dup(process.stdout.fileno())), CappedStream(os.dup(process.stderr.fileno()))
    process.stdout.close()
    process.stderr.close()
    timed_out = False
    try:
        if not wait_for(process, timeout):
            timed_out = True
            kill_group(process.pid)
            process.wait()
    finally:
        with _running_lock:
            _running.discard(process.pid)
    return CommandRun(
        command=command,
        exit_code=None if timed_out else process.returncode,
        stdout=redact(out.text()),
        stderr=redact(err.text()),
        duration_s=round(time.perf_counter() - start, 3),
        timed_out=timed_out,
        error=f"timed out after {timeout:g} s (process group killed)" if timed_out else None,
    )
