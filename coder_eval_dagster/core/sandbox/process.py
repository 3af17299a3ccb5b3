"""Shell commands with a timeout that kills the whole process group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from pydantic import BaseModel, Field

from ..secrets import redact

OUTPUT_CAP_BYTES = 100 * 1024
# Process groups of the commands running now, so that an interrupted run can
# stop them at once instead of waiting for them; once interrupted, no new
# command starts in this process.
_running: set[int] = set()
_running_lock = threading.Lock()
INTERRUPTED = threading.Event()
_TRUNCATED = "\n[... output truncated to 100 KB ...]"


class CommandRun(BaseModel):
    """What one shell command did (output capped, secrets redacted)."""

    command: str
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    timed_out: bool = False
    error: str | None = None
    # A process group still alive after the shell exited (a background daemon);
    # the evaluation kills it when it ends. Not persisted.
    lingering_group: int | None = Field(default=None, exclude=True)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None


def _read_capped(path: Path) -> str:
    with path.open("rb") as handle:
        data = handle.read(OUTPUT_CAP_BYTES + 1)
    if len(data) <= OUTPUT_CAP_BYTES:
        return data.decode("utf-8", errors="replace")
    keep = OUTPUT_CAP_BYTES - len(_TRUNCATED.encode())
    return data[:keep].decode("utf-8", errors="ignore") + _TRUNCATED


def interrupt_all() -> None:
    """Stop every running command's process group now, and start no new one."""
    with _running_lock:
        INTERRUPTED.set()
        groups = list(_running)
    for pgid in groups:
        kill_group(pgid)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_shell(command: str, cwd: Path, timeout: float, env: dict[str, str] | None = None) -> CommandRun:
    """Run ``command`` with ``/bin/sh -c`` in its own process group.

    Output goes to files, not pipes: a command that starts a background
    daemon (``server &``) returns as soon as the shell exits instead of
    holding the pipe open until the timeout. On timeout the whole group is
    killed. Background processes that outlive the shell keep running and are
    reported in ``lingering_group``, for the evaluation to kill when it ends.
    """
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="coder-eval-cmd-") as scratch:
        out_path, err_path = Path(scratch) / "stdout", Path(scratch) / "stderr"
        with out_path.open("wb") as out, err_path.open("wb") as err:
            # check, start and register as one step: an interruption either sees this command or stops it starting
            with _running_lock:
                if INTERRUPTED.is_set():
                    return CommandRun(command=command, error="not started: the run was interrupted")
                try:
                    process = subprocess.Popen(
                        ["/bin/sh", "-c", command],
                        cwd=cwd,
                        env=env,
                        stdout=out,
                        stderr=err,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                    )
                except OSError as exc:
                    return CommandRun(command=command, error=f"could not start: {exc}")
                _running.add(process.pid)
            timed_out = False
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_group(process.pid)
                process.wait()
            finally:
                with _running_lock:
                    _running.discard(process.pid)
        return CommandRun(
            command=command,
            exit_code=None if timed_out else process.returncode,
            stdout=redact(_read_capped(out_path)),
            stderr=redact(_read_capped(err_path)),
            duration_s=round(time.perf_counter() - start, 3),
            timed_out=timed_out,
            error=f"timed out after {timeout:g} s (process group killed)" if timed_out else None,
            lingering_group=None if timed_out or not _group_alive(process.pid) else process.pid,
        )


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
