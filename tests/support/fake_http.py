"""What the scripted model servers share: a quiet recording handler on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class RecordingHandler(BaseHTTPRequestHandler):
    """Records every path; answers GET with 404 and proxy CONNECTs with 403 (and records them)."""

    script: Any  # the scripted server's state: it has a ``paths`` list

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def read_json(self) -> dict[str, Any]:
        self.script.paths.append(self.path)
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")

    def send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.script.paths.append(self.path)
        self.send(404, b"{}", "application/json")

    def do_CONNECT(self) -> None:  # as a proxy: any attempt to reach another host is recorded
        self.script.paths.append(f"CONNECT {self.path}")
        self.send(403, b"", "text/plain")


class LoopbackServer:
    """``with Server(script) as url:`` serves ``handler`` for ``script`` on 127.0.0.1."""

    handler: type[RecordingHandler]
    suffix = ""

    def __init__(self, script: Any):
        self.script = script
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (self.handler,), {"script": script}))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.suffix}"

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def serving(
    monkeypatch: Any, server: type[LoopbackServer], environment: Callable[[str], dict[str, str]]
) -> Iterator[Callable[[Any], Any]]:
    """A fixture body: ``serve(script)`` starts ``server`` and sets ``environment(url)``; all stop at the end."""
    servers: list[LoopbackServer] = []

    def serve(script: Any) -> Any:
        fake = server(script)
        url = fake.__enter__()
        for name, value in environment(url).items():
            monkeypatch.setenv(name, value)
        servers.append(fake)
        return fake

    yield serve
    for fake in servers:
        fake.__exit__()
