"""A real Docker engine for the tests: installed, started and stopped by them when absent.

When no engine answers, dockerd (Debian's docker.io, installed with apt-get
if missing) is started in the background and a marker records that the tests
started it; the controlling pytest process stops it when the session ends
(``stop_engine_if_started``, from conftest), unless another pytest session
still uses it (each session that asked for the engine is listed under
``users/`` by its controlling process's pid). The sandbox image is built once
and skipped afterwards while its inputs are unchanged (an image label holds
their hash), so it is cached between runs on the same machine. Both steps run
under a file lock: pytest-xdist workers share one engine and one image.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

STATE = Path(tempfile.gettempdir()) / "coder-eval-test-dockerd"
STARTED_MARKER = STATE / "started-by-tests"
PID_FILE = STATE / "dockerd.pid"
USERS = STATE / "users"  # one file per pytest session using the engine, named by its controlling process's pid
SESSION_ENV = "CODER_EVAL_TEST_SESSION"  # that pid, set by the controlling process for its xdist workers
BASE_ENV = "CODER_EVAL_TEST_DOCKER_BASE"  # the base to build the test image on (default: debian-local, offline)
ENGINE_START_TIMEOUT_S = 60
APT_TIMEOUT_S = 600


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    STATE.mkdir(parents=True, exist_ok=True)
    with (STATE / "lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def engine_answers() -> bool:
    import docker

    try:
        docker.from_env(timeout=5).ping()
    except Exception:
        return False
    return True


def _install_docker_io() -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=APT_TIMEOUT_S)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "docker.io", "debootstrap"], check=True, env=env, timeout=APT_TIMEOUT_S
    )


def _start_dockerd() -> None:
    log = (STATE / "dockerd.log").open("ab")
    subprocess.Popen(
        ["dockerd", "--pidfile", str(PID_FILE)],
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    STARTED_MARKER.touch()
    deadline = time.monotonic() + ENGINE_START_TIMEOUT_S
    while not engine_answers():
        if time.monotonic() > deadline:
            raise RuntimeError(f"dockerd did not answer within {ENGINE_START_TIMEOUT_S} s; see {STATE / 'dockerd.log'}")
        time.sleep(0.2)


def ensure_engine_and_image() -> str:
    """An answering engine with the sandbox image built on it; the image's name."""
    from coder_eval_dagster.core.sandbox.engine import default_image
    from coder_eval_dagster.core.sandbox.image import DEBIAN_LOCAL, build

    with _locked():
        USERS.mkdir(exist_ok=True)
        (USERS / os.environ.get(SESSION_ENV, str(os.getpid()))).touch()
        if not engine_answers():
            if shutil.which("dockerd") is None or shutil.which("debootstrap") is None:
                _install_docker_io()
            _start_dockerd()
        image = default_image()
        build(image, os.environ.get(BASE_ENV, DEBIAN_LOCAL), say=lambda _: None)
    return image


def stop_engine_if_started() -> None:
    """Stop the dockerd these tests started (none started: nothing to do), once no other live session uses it: a
    session ending beside another (a test run beside the suite) stopped the engine under the other's tests."""
    with _locked():
        (USERS / str(os.getpid())).unlink(missing_ok=True)
        if _live_users() or not STARTED_MARKER.exists():
            return
        with contextlib.suppress(OSError, ValueError):
            pid = int(PID_FILE.read_text().strip())
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
                time.sleep(0.1)
        STARTED_MARKER.unlink()


def _live_users() -> list[str]:
    """The sessions still using the engine; a killed session's file is dropped."""
    live = []
    for user in USERS.glob("*") if USERS.is_dir() else []:
        if user.name.isdigit() and Path(f"/proc/{user.name}").exists():
            live.append(user.name)
        else:
            user.unlink(missing_ok=True)
    return live
