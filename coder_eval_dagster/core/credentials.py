"""Credentials: the one accessor for the whole program, and their hand-over out of the process environment.

``/proc/<pid>/environ`` shows the environment a process was *started* with,
whatever it later deletes from ``os.environ``. So the CLI, when started with
credentials in its environment, starts itself again (same pid, ``execve``)
with them removed, writing them into an inherited pipe that the new image
reads once and closes. Every coder-eval process is then clean in /proc, and
the credentials live only in this module's memory.

Whatever started the process (the CLI after that re-exec, a Dagster run
worker under `coder-eval dev` or the daemon, a library caller),
:meth:`Credentials.of_process` is how a run takes them: once, into its run
context, from which agents, judges and the simulator read them.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

HANDOVER_FD = "CODER_EVAL_CREDENTIALS_FD"
# What counts as a credential: any variable so named (the model keys, cloud and forge tokens, passwords).
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
_GIT_CONFIG_KEY = re.compile(r"GIT_CONFIG_KEY_\d+")
_handed_over: dict[str, str] = {}  # filled once, at start-up, from the re-exec's pipe


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Asked for every variable of every command's environment: the names repeat, the answer is kept. git's
    ``GIT_CONFIG_KEY_<n>`` names a setting (``http.extraheader``), not a key: its value is its ``_VALUE_<n>``'s."""
    return bool(_SECRET_NAME.search(name)) and not _GIT_CONFIG_KEY.fullmatch(name)


@dataclass(frozen=True)
class Credentials:
    """A read-only view of the credentials a run may use, taken once and passed down in its run context."""

    by_name: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def of_process(cls) -> Credentials:
        """Those handed over at start-up, and any secret-named variable of the environment.

        The environment holds them when nothing re-executed this process: a
        Dagster run worker started by `coder-eval dev` or the daemon, a library caller, a test.
        """
        return cls({**_in_environment(), **_handed_over})

    def get(self, name: str) -> str | None:
        return self.by_name.get(name) or None

    def __repr__(self) -> str:  # never a value, even in a traceback
        return f"Credentials({sorted(self.by_name)})"


def handed_over_values() -> list[str]:
    """Every credential value handed over at start-up (for redaction: they are in no environment)."""
    return list(_handed_over.values())


def _in_environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if is_secret_name(name)}


def receive() -> None:
    """In the re-executed image: read the credentials from the pipe and close it."""
    fd = os.environ.pop(HANDOVER_FD, None)
    if fd is None:
        return
    with os.fdopen(int(fd), "rb") as pipe:
        _handed_over.update(json.loads(pipe.read() or b"{}"))


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
