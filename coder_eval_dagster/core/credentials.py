"""Credentials out of the process environment: a re-exec that hands them over through a pipe.

``/proc/<pid>/environ`` shows the environment a process was *started* with,
whatever it later deletes from ``os.environ``. So the CLI, when started with
credentials in its environment, starts itself again (same pid, ``execve``)
with them removed, writing them into an inherited pipe that the new image
reads once and closes. Every coder-eval process is then clean in /proc, and
the credentials live only in this module's memory: everything that needs
one asks :func:`get`.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys

HANDOVER_FD = "CODER_EVAL_CREDENTIALS_FD"
# What counts as a credential: any variable so named (the model keys, cloud and forge tokens, passwords).
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
_store: dict[str, str] = {}


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Asked for every variable of every command's environment: the names repeat, the answer is kept."""
    return bool(_SECRET_NAME.search(name))


def get(name: str) -> str | None:
    """A credential: handed over at start-up, else (a library caller, a test) from the environment."""
    return _store.get(name) or os.environ.get(name) or None


def values() -> list[str]:
    """Every handed-over credential value (for redaction)."""
    return list(_store.values())


def _in_environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if is_secret_name(name)}


def receive() -> None:
    """In the re-executed image: read the credentials from the pipe and close it."""
    fd = os.environ.pop(HANDOVER_FD, None)
    if fd is None:
        return
    with os.fdopen(int(fd), "rb") as pipe:
        _store.update(json.loads(pipe.read() or b"{}"))


def reexec_without_credentials() -> None:
    """Start this program again without credentials in its environment, handing them over (never returns).

    Does nothing when the environment holds none (and in the re-executed image).
    """
    receive()
    found = _in_environment()
    if not found:
        return
    read_end, write_end = os.pipe()
    os.write(write_end, json.dumps(found).encode())  # a few KB at most: fits in the pipe buffer
    os.close(write_end)
    os.set_inheritable(read_end, True)
    clean = {name: value for name, value in os.environ.items() if name not in found}
    clean[HANDOVER_FD] = str(read_end)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, clean)
