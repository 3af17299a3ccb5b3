"""The relay and the docker driver's attach end with whoever started them, even when it dies by ``kill -9``.

Under the docker driver the agent CLI runs in the container and ``docker_attach`` on this machine holds its
exec's connection as long as the CLI runs: nothing of the harness's death reached either, and both ran on
(with the CLI) until the next run removed the container. The engine here is a stand-in on a unix socket
whose exec never ends, as a CLI waiting on its model does; no Docker is needed.
"""

from __future__ import annotations

import json
import os
import signal
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from coder_eval_dagster.core import stdio_relay

ATTACH = [sys.executable, "-m", "coder_eval_dagster.core.sandbox.docker_attach"]


class _Engine(BaseHTTPRequestHandler):
    """The engine API calls docker_attach makes; the exec's stream is held open, silent, until the test ends."""

    protocol_version = "HTTP/1.1"
    attached: threading.Event
    done: threading.Event

    def log_message(self, *args: object) -> None:
        pass

    def address_string(self) -> str:  # a unix socket's peer has no address
        return "engine"

    def _json(self, status: int, body: dict[str, str]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # /version
        self._json(200, {"ApiVersion": "1.41"})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path.endswith("/exec"):
            self._json(201, {"Id": "exec1"})
            return
        self.send_response(101)
        self.send_header("Content-Type", "application/vnd.docker.raw-stream")
        self.send_header("Connection", "Upgrade")
        self.send_header("Upgrade", "tcp")
        self.end_headers()
        self.wfile.flush()
        self.attached.set()
        self.done.wait()


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[tuple[str, threading.Event]]:
    """A unix socket's DOCKER_HOST, and the event set once an exec is attached."""
    attached, done = threading.Event(), threading.Event()
    server = _Server(str(tmp_path / "engine.sock"), type("Engine", (_Engine,), {"attached": attached, "done": done}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"unix://{tmp_path / 'engine.sock'}", attached
    done.set()
    server.shutdown()
    server.server_close()


def _relayed_attach(docker_host: str) -> list[str]:
    """The relay running docker_attach, as the claude-code agent's wrapper starts it under the docker driver."""
    spec = {"container": "c1", "user": "1000:1000", "docker_host": docker_host, "workdir": "/sandbox"}
    return [sys.executable, "-I", stdio_relay.__file__, *ATTACH, json.dumps(spec), "claude"]


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (not a zombie: its parent, this test, has not waited for it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def _gone_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(map(_running, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(map(_running, pids))


def _started(command: list[str], attached: threading.Event) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
    assert attached.wait(60), "the exec was never attached"
    return process


def _ended(process: subprocess.Popen[bytes], *others: int) -> Callable[[], None]:
    """A clean-up that kills ``process``'s group and ``others`` if the test left them."""

    def end() -> None:
        for pid in others:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    return end


def test_the_attach_ends_when_its_relay_is_killed(engine: tuple[str, threading.Event]) -> None:
    """A SIGKILL to the relay, the SDK's last resort, cannot be passed on: the attach sees its stdout's reader go."""
    docker_host, attached = engine
    relay = _started(_relayed_attach(docker_host), attached)
    (attach,) = _children(relay.pid)
    try:
        relay.kill()
        relay.wait(timeout=10)
        assert _gone_within([attach], 5), Path(f"/proc/{attach}/cmdline").read_bytes()
    finally:
        _ended(relay, attach)()


def test_the_relay_and_the_attach_end_when_the_harness_dies_by_kill_9(engine: tuple[str, threading.Event]) -> None:
    """The harness (a stand-in starting the relay as the SDK does, with pipes) killed: neither runs on."""
    docker_host, attached = engine
    harness_code = (
        "import subprocess, sys, time\n"
        "relay = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n"
        "time.sleep(600)\n"
    )
    harness = _started([sys.executable, "-c", harness_code, *_relayed_attach(docker_host)], attached)
    (relay,) = _children(harness.pid)
    (attach,) = _children(relay)
    try:
        harness.kill()
        harness.wait(timeout=10)
        assert _gone_within([relay, attach], 5), [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in (relay, attach)]
    finally:
        _ended(harness, relay, attach)()
