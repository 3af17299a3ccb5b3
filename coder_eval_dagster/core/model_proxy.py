"""A loopback proxy that keeps the model API credentials away from the agent CLIs (and their tools).

An agent CLI (Claude Code, Codex, the agent judge) and every command its
tools start run as the harness's user, in the evaluation's namespace or
container: whatever the CLI holds in its environment or memory, a Bash call
can read (``/proc/<pid>/environ`` of its parent). So a CLI never gets a real
key. It gets a grant: a random token valid for that one agent run and a base
URL on this proxy. The proxy checks the token, puts the real credential in
its place, forwards the request to the real endpoint (through the caller's
HTTPS_PROXY, as any client would) and streams the answer back; the grant is
revoked when the agent run ends.

    /g/<grant id>/<path>   ->   <upstream base URL>/<path>

A request without its grant's token, or for a revoked grant, gets 403 and
goes nowhere; so does one the grant's ``admit`` check refuses (an agent run
the harness has stopped, whose CLI has not seen it yet), and any request
that is not one of the model calls its upstream's API makes (``Upstream.calls``):
the grant stands for the real key, and the key opens more than model calls
(files, batches, the organisation), none of them counted or stopped by the
run's limits.
"""

from __future__ import annotations

import functools
import hmac
import json
import re
import secrets
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .secrets import redact

PREFIX = "/g/"
LOOPBACK = "127.0.0.1"
MAX_BODY_BYTES = 32 * 1024 * 1024  # a model request's body: the Messages API's own limit
LINGER_S, LINGER_BYTES = 5.0, 64 * 1024 * 1024  # what of a refused request's body is read and dropped, at most
CONNECT_TIMEOUT_S = 60.0  # also the longest silence between two chunks of a streamed answer
# Not forwarded in either direction: they describe one connection, not the request (RFC 9110, 7.6.1).
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding"}
    | {"upgrade", "host", "content-length"}
)
STREAM_CHUNK = 65536
Admit = Callable[[], bool]  # asked before each request of a grant is forwarded: False refuses it

# The model calls a grant lets through, by API: "METHOD path" after the grant's base URL, without the query.
MESSAGES_API = (r"POST (v1/)?messages(/count_tokens)?",)  # Anthropic's (Claude Code, the agent judge, opencode)
BEDROCK_API = (  # a model id is one URL-encoded segment (an inference profile's ARN has its / as %2F)
    r"POST model/(?!\.\.?/)[A-Za-z0-9._:%-]+/"
    r"(invoke|invoke-with-response-stream|converse|converse-stream|count-tokens)",
)
OPENAI_API = (r"POST (v1/)?(responses|chat/completions)",)  # Codex, opencode's OpenAI-compatible providers


@dataclass(frozen=True)
class Upstream:
    """Where a grant's requests go, and the credential they carry there."""

    base_url: str  # e.g. https://api.anthropic.com, a Bedrock runtime, a gateway
    header: str  # the header holding the credential: "x-api-key" or "authorization"
    value: str = field(repr=False)  # the real credential's header value (a key, or "Bearer <token>")
    calls: tuple[str, ...] = ()  # the requests forwarded ("METHOD path" patterns: MESSAGES_API...); none else

    def presented(self, token: str) -> str:
        """The header value a client holding ``token`` sends in place of the real one."""
        return f"Bearer {token}" if self.header == "authorization" else token

    def allows(self, method: str, path: str) -> bool:
        """Whether ``method`` on ``path`` (after the base URL, its query ignored) is one of the model calls."""
        call = f"{method} {urllib.parse.urlsplit(path).path}"
        return any(re.fullmatch(pattern, call) for pattern in self.calls)


@dataclass(frozen=True)
class Grant:
    """What an agent CLI is given instead of a credential: a token and where to send it."""

    token: str = field(repr=False)
    base_url: str


def named_in(message: str, grant_url: str | None, upstream_url: str) -> str:
    """An agent CLI's error as the user can act on it: the proxy's loopback address it names is coder-eval's,
    gone with the run. A URL under the grant (``.../g/<id>/responses``) becomes the upstream one the request
    went to; the bare address ("check your inference gateway (127.0.0.1:43211)") says where it forwarded to."""
    if not grant_url or PREFIX not in grant_url:
        return message
    proxy = urllib.parse.urlsplit(grant_url).netloc
    forwarded = message.replace(grant_url.rstrip("/"), upstream_url.rstrip("/"))
    return forwarded.replace(proxy, f"{proxy}: coder-eval's model proxy to {upstream_url}")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect goes back to the CLI as it is: following it would carry the credential elsewhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirect)


@functools.cache
def shared_proxy() -> ModelProxy:
    """The process's proxy: every run context grants through it (each grant carries its own upstream), so a
    process holds one listening socket per host however many runs it makes."""
    return ModelProxy()


class ModelProxy:
    """Serves on each host a grant asks for (127.0.0.1, a bridge's gateway), from the first such grant on."""

    def __init__(self) -> None:
        self._grants: dict[str, tuple[str, Upstream, Admit | None]] = {}  # grant id -> (token, upstream, admit)
        self._lock = threading.Lock()
        self._servers: dict[str, ThreadingHTTPServer] = {}

    @contextmanager
    def granted(self, upstream: Upstream, host: str = LOOPBACK, admit: Admit | None = None) -> Iterator[Grant]:
        """A grant for one agent run, reachable at ``host`` (a container's view of this machine); revoked after.

        ``admit``: asked before each of its requests is forwarded (on the proxy's thread); False refuses it.
        """
        grant_id, token = secrets.token_hex(8), secrets.token_hex(24)
        port = self._serve_on(host)
        with self._lock:
            self._grants[grant_id] = (token, upstream, admit)
        try:
            yield Grant(token, f"http://{host}:{port}{PREFIX}{grant_id}")
        finally:
            with self._lock:
                self._grants.pop(grant_id, None)

    def lookup(self, grant_id: str, presented: str | None) -> tuple[Upstream, Admit | None] | None:
        """The upstream and admit check of a live grant whose token the request presents, else None."""
        with self._lock:
            found = self._grants.get(grant_id)
        if found is None or presented is None:
            return None
        token, upstream, admit = found
        return (upstream, admit) if hmac.compare_digest(presented, upstream.presented(token)) else None

    def port(self) -> int:
        """The port it serves on this machine's loopback (started now if need be): a confined sandbox gets a
        listener on its own loopback at the same port, so that a grant's base URL works unchanged inside."""
        return self._serve_on(LOOPBACK)

    def serve_connection(self, connection: socket.socket) -> None:
        """Serve a client that connected elsewhere (a sandbox's listener), on the caller's thread."""
        server = self._servers.get(LOOPBACK)
        if server is None:  # closed meanwhile
            return
        server.finish_request(connection, connection.getpeername() or (LOOPBACK, 0))
        server.shutdown_request(connection)

    def close(self) -> None:
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.shutdown()
            server.server_close()

    def _serve_on(self, host: str) -> int:
        with self._lock:
            server = self._servers.get(host)
            if server is None:
                handler = type("Handler", (_Handler,), {"proxy": self})
                server = ThreadingHTTPServer((host, 0), handler)
                server.daemon_threads = True
                threading.Thread(target=server.serve_forever, name="coder-eval-model-proxy", daemon=True).start()
                self._servers[host] = server
            return server.server_address[1]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the CLIs reuse their connection
    proxy: ModelProxy

    def log_message(self, *args: Any) -> None:  # paths and statuses only, but nobody asked for them
        pass

    def do_POST(self) -> None:
        self._forward()

    def do_GET(self) -> None:
        self._forward()

    def _body(self) -> bytes | None:
        """The request body, as a length or in chunks (a streaming client sends no length); None past
        MAX_BODY_BYTES, which is not read (the agent sends it: unbounded, it would fill the harness's memory)."""
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if 0 <= length <= MAX_BODY_BYTES else None
        parts, total = [], 0
        while size := int(self.rfile.readline(64).split(b";")[0].strip() or b"0", 16):
            total += size
            if size < 0 or total > MAX_BODY_BYTES:
                return None
            parts.append(self.rfile.read(size))
            self.rfile.readline(64)
        while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):  # trailers
            pass
        return b"".join(parts)

    def _forward(self) -> None:
        """Refused before its body is read (the connection is then closed, the body left unread): a request without
        a live grant, one its grant does not let through, one past MAX_BODY_BYTES."""
        admitted = self._admitted()
        if admitted is None:
            return
        upstream, rest = admitted
        try:
            body = self._body()
        except ValueError:  # a chunk size that is no number
            body = None
        if body is None:
            self._refuse(413, f"the request body is malformed or over {MAX_BODY_BYTES} bytes: not forwarded")
            return
        request = urllib.request.Request(
            upstream.base_url.rstrip("/") + "/" + rest,
            data=body if self.command != "GET" else None,
            headers=self._headers_for(upstream),
            method=self.command,
        )
        try:
            response = _opener.open(request, timeout=CONNECT_TIMEOUT_S)
        except urllib.error.HTTPError as exc:  # an API error: the CLI reads it as it would without the proxy
            response = exc
        except OSError as exc:
            self._error(502, redact(f"the model API could not be reached: {exc}"))
            return
        with response:
            self._relay(response)

    def _admitted(self) -> tuple[Upstream, str] | None:
        """The upstream of a request its grant lets through now and the path there, else None (refusal sent)."""
        grant_id, _, rest = self.path[len(PREFIX) :].partition("/") if self.path.startswith(PREFIX) else ("", "", "")
        found = None
        for header in ("x-api-key", "authorization"):
            found = found or self.proxy.lookup(grant_id, self.headers.get(header))
        if found is None:
            self._refuse(403, "no valid grant for this request")
            return None
        upstream, admit = found
        if not upstream.allows(self.command, rest):
            self._refuse(403, f"not a model call: {self.command} /{urllib.parse.urlsplit(rest).path} is not forwarded")
            return None
        if admit is not None and not admit():
            self._refuse(403, "the harness has stopped this agent: no further model request")
            return None
        return upstream, rest

    def _headers_for(self, upstream: Upstream) -> dict[str, str]:
        headers = {
            name: value
            for name, value in self.headers.items()
            if name.lower() not in HOP_BY_HOP and name.lower() not in ("x-api-key", "authorization")
        }
        headers[upstream.header] = upstream.value
        return headers

    def _relay(self, response: Any) -> None:
        """The upstream's status, headers and body, streamed as it comes (chunked to the CLI)."""
        self.send_response(response.status)
        for name, value in response.headers.items():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        while chunk := response.read1(STREAM_CHUNK):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _refuse(self, status: int, message: str) -> None:
        """The refusal of a request whose body is left unread, then the body read and dropped (bounded in bytes and
        time) before the connection closes: closed at once, a client still sending got a broken pipe, not this."""
        self._error(status, message)
        self.wfile.flush()
        try:
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(LINGER_S)
            deadline, dropped = time.monotonic() + LINGER_S, 0
            while dropped < LINGER_BYTES and time.monotonic() < deadline and (chunk := self.rfile.read1(STREAM_CHUNK)):
                dropped += len(chunk)
        except OSError:  # the client is gone, or took too long: closed as it is
            pass

    def _error(self, status: int, message: str) -> None:
        """A refusal, after which the connection is closed: the request's body may be left unread."""
        body = json.dumps({"type": "error", "error": {"type": "proxy_error", "message": message}}).encode()
        self.close_connection = True
        self.send_response(status)
        self.send_header("Connection", "close")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
