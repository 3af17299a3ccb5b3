"""A ledger on the host's loopback that sandboxed commands report to, for tests that count what ran across runs.

Confined commands cannot write the host's files (docs/running.md, Security model); a task lets them reach the
ledger through its network allow-list (``Ledger.network``), and they report with ``curl``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Ledger:
    """``GET /<name>`` records ``name`` (and calls ``on_report`` with it, on the host: what a sandboxed command
    may not do itself); ``GET /once-<name>`` also fails (503) the first time it is asked."""

    def __init__(self, on_report: Callable[[str], None] | None = None) -> None:
        self.names: list[str] = []
        ledger = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                name = self.path.strip("/")
                first = name not in ledger.names
                ledger.names.append(name)
                if on_report is not None:
                    on_report(name)
                self.send_response(503 if first and name.startswith("once-") else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def network(self) -> dict[str, Any]:
        """The ``sandbox.network`` block that lets a task's commands reach the ledger."""
        return {"allow": [self.url.removeprefix("http://")]}

    def report(self, name: str) -> str:
        """The command that records ``name``."""
        return f"curl -s {self.url}/{name}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
