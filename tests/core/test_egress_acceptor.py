"""The harness's acceptor of sandbox connections (the docker driver's egress socket): an agent that opens
thousands and holds them cannot take a thread and a descriptor of the harness for each."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from coder_eval_dagster.core.sandbox.egress import MAX_OPEN, Acceptor


def test_a_listener_serves_at_most_max_open_connections_at_once(tmp_path: Path) -> None:
    release, served, finished = threading.Event(), [], []
    lock = threading.Lock()

    def hold(connection: socket.socket) -> None:  # a client that sends nothing: the handler waits on it
        with lock:
            served.append(connection)
        release.wait(30)
        with lock:
            finished.append(connection)

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "egress.sock"))
    listener.listen(64)
    acceptor = Acceptor()
    acceptor.serve(listener, hold)
    clients = []
    try:
        for _ in range(MAX_OPEN + 40):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(str(tmp_path / "egress.sock"))  # blocking: waits while the backlog is full
            client.settimeout(5)
            clients.append(client)
        deadline = time.monotonic() + 10
        while len(served) < MAX_OPEN and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # the acceptor goes on with the rest
        assert len(served) == MAX_OPEN
        assert clients[-1].recv(1) == b""  # one beyond the cap: closed at once
        release.set()
        deadline = time.monotonic() + 10
        while len(finished) < MAX_OPEN and time.monotonic() < deadline:  # (a connection while they still held
            time.sleep(0.01)  # the cap was closed at once: the test raced them on a loaded machine)
        deadline = time.monotonic() + 10
        while len(served) == MAX_OPEN and time.monotonic() < deadline:  # (each handler's thread gives its place
            late = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # back as it ends: one refused before, tried
            late.connect(str(tmp_path / "egress.sock"))  # again)
            clients.append(late)
            tried = time.monotonic() + 0.5
            while len(served) == MAX_OPEN and time.monotonic() < tried:
                time.sleep(0.01)
        assert len(served) > MAX_OPEN  # the served ones done, a new one is served again
    finally:
        release.set()
        acceptor.stop(listener)
        for client in clients:
            client.close()
