"""A real telemetry backend for the tests: Arize Phoenix (its OTLP/HTTP traces endpoint and REST API).

Installed once per machine from PyPI, with the project's uv, into a venv of
its own beside the tests' other services (it is a test tool, not a
dependency: 850 MB); file-locked, since pytest-xdist workers share it.
Phoenix keeps traces only: the tests read OpenTelemetry log records and
metrics from ``otlp_receiver``.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .dagster_services import free_port

PHOENIX = "arize-phoenix==20.26.1"
HOME = Path(tempfile.gettempdir()) / "coder-eval-test-phoenix"
INSTALL_TIMEOUT_S, START_TIMEOUT_S = 900, 240


def installed() -> Path:
    """The ``phoenix`` command, installed on first use."""
    HOME.mkdir(parents=True, exist_ok=True)
    command = HOME / "venv" / "bin" / "phoenix"
    with (HOME / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not command.exists():
            uv = Path(sys.executable).parent / "uv"
            python = Path(sys.base_prefix) / "bin" / "python3"
            # --clear: an install an earlier session was stopped in the middle of leaves a venv without phoenix
            subprocess.run(
                [str(uv), "venv", "-q", "--clear", "-p", str(python), str(HOME / "venv")], check=True, timeout=120
            )
            subprocess.run(
                [str(uv), "pip", "install", "-q", "--python", str(HOME / "venv" / "bin" / "python"), PHOENIX],
                check=True,
                timeout=INSTALL_TIMEOUT_S,
            )
    return command


@contextmanager
def running_phoenix(workdir: Path) -> Iterator[str]:
    """A Phoenix server on 127.0.0.1 (its own working folder); yields its base URL, stopped with its group after."""
    port, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (workdir / "phoenix.log").open("wb")
    process = subprocess.Popen([str(installed()), "serve"], env=env, stdout=log, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Phoenix did not start; see {workdir / 'phoenix.log'}")
            time.sleep(1)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def spans(url: str, expected: int, timeout: float = 60) -> list[dict[str, Any]]:
    """The spans Phoenix has stored (its default project), once at least ``expected`` have arrived."""
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(f"{url}/v1/projects/default/spans?limit=1000", timeout=10) as response:
            found: list[dict[str, Any]] = json.loads(response.read())["data"]
        if len(found) >= expected or time.monotonic() > deadline:
            return found
        time.sleep(1)
