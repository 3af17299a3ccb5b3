"""Wait for a child's exit without polling: ``Popen.wait(timeout)`` sleeps in a loop (milliseconds per command)."""

from __future__ import annotations

import os
import select
import subprocess


def wait_for(process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait until ``process`` exits (woken by its pidfd at the exit) and reap it; False if ``timeout`` passed first."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except OSError:  # already reaped, or a kernel without pidfds
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        if not readable_within(pidfd, timeout):
            return False
    finally:
        os.close(pidfd)
    process.wait()
    return True


def readable_within(fd: int, timeout: float) -> bool:
    """Whether ``fd`` becomes readable (a pidfd: its process exited) within ``timeout`` seconds."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, int(timeout * 1000))))
