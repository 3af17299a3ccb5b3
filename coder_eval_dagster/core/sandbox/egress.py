"""What an evaluation's commands may reach of the network, phase by phase, and what they were refused.

A confined sandbox has no network of its own: a network namespace with only
its loopback (tempdir), or a container with none (docker). The harness
listens inside it, with no process of its own there: on a socket the
namespace's first process opened and handed over (tempdir), or on a Unix
socket a small forwarder in the container relays to (docker). What listens:

- the egress proxy (``HTTP(S)_PROXY``): ``CONNECT host:port`` and plain
  ``http://`` requests, each checked against the evaluation's :class:`Gate`
  for the phase it is in: ``setup`` reaches the package index only; the
  other phases (pre_run, agent, score, post_run) reach the hosts the task
  allows (``sandbox.network.allow``). A refused request gets ``403 Forbidden
  by coder-eval egress policy`` and is recorded with its host, port and phase.
  Names are resolved here, on the host: the sandbox has no DNS of its own.
- the model proxy (``core/model_proxy.py``), for an agent run: its grant's
  base URL works unchanged inside.
- each allowed ``127.0.0.1:port`` (or ``localhost:port``), forwarded to the
  host's: a test's scripted server, a service the task needs. The sandbox's
  other loopback ports are its own.

Commands get ``NO_PROXY=localhost,127.0.0.1,::1``: their own servers on the
sandbox's loopback are reached directly. A client that ignores the proxy
variables reaches nothing outside (no route, no name resolution), and such
an attempt is not recorded.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import selectors
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeAlias
from urllib.parse import urlsplit

from ..model_proxy import shared_proxy
from ..models.sandbox import SandboxConfig

LOOPBACK = "127.0.0.1"
EGRESS_PORT = 3128  # the egress proxy's port on every confined sandbox's loopback (its own: any port would do)
NO_PROXY = "localhost,127.0.0.1,::1"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
HEAD_LIMIT = 64 * 1024
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 30.0
CHUNK = 65536
MAX_OPEN = 128  # connections served at once on one listener (an evaluation's): each holds a thread and 2 descriptors
# The package index, for the setup phase (uv and pip read these; the default is PyPI).
INDEX_VARIABLES = (
    *("UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_INDEX"),
    *("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"),
)
PYPI = (("pypi.org", 443), ("files.pythonhosted.org", 443))
# The npm registry, for the setup phase of a task with node packages (npm and bun read these).
NPM_VARIABLES = ("NPM_CONFIG_REGISTRY", "npm_config_registry", "BUN_CONFIG_REGISTRY")
NPM = (("registry.npmjs.org", 443),)
Handler: TypeAlias = Callable[[socket.socket], None]  # serves one accepted connection (on a thread of its own)


@dataclass(frozen=True)
class Refusal:
    host: str
    port: int
    phase: str


# What an evaluation records of its refusals: each host, port and phase once, the first REFUSALS_KEPT of them, a
# name cut to a DNS name's longest. A command that asked for 64 KiB names in a loop filled the harness's memory and
# its task.json (180 MB in 9 s).
REFUSALS_KEPT = 100
HOST_KEPT = 253


class Gate:
    """One evaluation's network policy as it runs: its phase, what it allows then, and what was refused."""

    def __init__(self, allow: Iterable[tuple[str, int]], index: Iterable[tuple[str, int]], model: bool = True):
        self.allow, self.index, self.model = frozenset(allow), frozenset(index), model
        self.granted: frozenset[tuple[str, int]] = frozenset()  # the harness's own endpoints, for the agent phase
        self.phase = "setup"
        self.refused: list[Refusal] = []  # since the last take_refused
        self.recorded: set[Refusal] = set()
        self.unlisted = 0  # refusals past the first REFUSALS_KEPT distinct ones
        self.lock = threading.Lock()

    def permits(self, host: str, port: int) -> bool:
        target = (_canonical(host), port)
        if self.phase == "setup":
            return target in self.index
        return target in self.allow or (self.phase == "agent" and target in self.granted)

    def grant(self, url: str) -> None:
        """Let the agent phase reach ``url``'s host and port: an endpoint the harness itself points the agent CLI
        at (its telemetry's), which the task need not allow."""
        parsed = urlsplit(url)
        if parsed.hostname:
            self.granted |= {(_canonical(parsed.hostname), parsed.port or (443 if parsed.scheme == "https" else 80))}

    def refuse(self, host: str, port: int) -> Refusal:
        refusal = Refusal(_canonical(host)[:HOST_KEPT], port, self.phase)
        with self.lock:
            if refusal in self.recorded:
                return refusal
            if len(self.recorded) < REFUSALS_KEPT:
                self.recorded.add(refusal)
                self.refused.append(refusal)
            else:
                self.unlisted += 1
        return refusal

    def mark(self) -> tuple[int, int]:
        """Where the refusals stand, for ``refusal_notes`` after a command."""
        with self.lock:
            return len(self.refused), self.unlisted

    def take_refused(self) -> list[Refusal]:
        """The refusals recorded since the last call."""
        with self.lock:
            taken, self.refused = self.refused, []
        return taken

    def loopback_ports(self) -> list[int]:
        """The host's loopback ports the task allows (or the package index is on): forwarded to the same address
        inside, each connection checked against the phase it comes in."""
        return sorted({port for host, port in self.allow | self.index | self.granted if host == LOOPBACK})


def model_only(phase: str) -> Gate:
    """A gate that lets nothing through but the model proxy (an agent judge's)."""
    gate = Gate((), ())
    gate.phase = phase
    return gate


def gate_for(config: SandboxConfig) -> Gate | None:
    """The gate of ``sandbox.network``; None: the network is open (``open: true``, ``bridge``, ``host``)."""
    network = config.network
    if network == "none":
        return Gate((), (), model=False)
    if isinstance(network, str) or network.open:
        return None
    node = config.node is not None and bool(config.node.env_packages)
    return Gate((_split(entry) for entry in network.allow), package_indexes(node))


def package_indexes(node: bool = False) -> list[tuple[str, int]]:
    """Where setup's packages come from: the indexes uv and pip are pointed at, else PyPI; with ``node``, the
    registry npm and bun are pointed at too, else npm's."""
    python = _hosts(INDEX_VARIABLES) or list(PYPI)
    return [*python, *(_hosts(NPM_VARIABLES) or NPM)] if node else python


def _hosts(variables: Iterable[str]) -> list[tuple[str, int]]:
    """The hosts and ports of the URLs in the harness's environment variables (``name=URL`` words too: uv's)."""
    found: list[tuple[str, int]] = []
    for name in variables:
        for word in os.environ.get(name, "").split():
            url = urlsplit(word.split("=", 1)[-1] if "=" in word.split("://")[0] else word)
            if url.scheme in ("http", "https") and url.hostname:
                found.append((url.hostname, url.port or (443 if url.scheme == "https" else 80)))
    return found


def proxy_environment() -> dict[str, str]:
    """The variables that point a confined sandbox's clients at its egress proxy."""
    proxy = f"http://{LOOPBACK}:{EGRESS_PORT}"
    return {**dict.fromkeys(PROXY_VARIABLES, proxy), "NO_PROXY": NO_PROXY, "no_proxy": NO_PROXY}


def refusal_notes(gate: Gate | None, mark: tuple[int, int]) -> str:
    """What a command's stderr gets said of the refusals since the gate's ``mark``: each one recorded, and how many
    more were not."""
    if gate is None:
        return ""
    with gate.lock:
        refused, unlisted = gate.refused[mark[0] :], gate.unlisted - mark[1]
    notes = [f"[coder-eval: {r.host}:{r.port} refused by the sandbox's network policy ({r.phase})]\n" for r in refused]
    if unlisted:
        more = f"{unlisted} more connection(s) refused by the sandbox's network policy, not listed"
        notes.append(f"[coder-eval: {more}]\n")
    return "".join(notes)


REFUSAL_NOTE = re.compile(r"\[coder-eval: (\S+) refused by the sandbox's network policy \(")


def refused_in(stderr: str) -> list[str]:
    """The ``host:port`` a command's stderr says the network policy refused it (``refusal_notes``), once each."""
    return list(dict.fromkeys(REFUSAL_NOTE.findall(stderr)))


def _canonical(host: str) -> str:
    host = host.strip("[]").lower().rstrip(".")
    return LOOPBACK if host == "localhost" else host


def _split(entry: str) -> tuple[str, int]:
    host, _, port = entry.rpartition(":")
    return _canonical(host), int(port)


# ----------------------------------------------------------------------------- accepting


class Acceptor:
    """One thread accepting on every listener of the process; each connection is served on a thread of its own."""

    def __init__(self) -> None:
        self.selector = selectors.DefaultSelector()
        self.lock = threading.Lock()
        self.wake_read, self.wake_write = socket.socketpair()
        self.selector.register(self.wake_read, selectors.EVENT_READ, None)
        self.thread: threading.Thread | None = None

    def serve(self, listener: socket.socket, handle: Handler) -> None:
        listener.setblocking(False)
        with self.lock:
            self.selector.register(listener, selectors.EVENT_READ, (handle, threading.BoundedSemaphore(MAX_OPEN)))
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="coder-eval-egress", daemon=True)
                self.thread.start()
        self.wake_write.send(b"x")

    def stop(self, listener: socket.socket) -> None:
        with self.lock, contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(listener)
        listener.close()

    def _run(self) -> None:
        while True:
            for key, _ in self.selector.select():
                if key.data is None:
                    self.wake_read.recv(4096)
                    continue
                try:
                    connection, _ = key.fileobj.accept()  # type: ignore[union-attr]  # the listeners are sockets
                except OSError as exc:  # gone meanwhile, or stopped; out of descriptors: not a busy loop
                    if exc.errno == errno.EMFILE:
                        time.sleep(0.05)
                    continue
                self._start(connection, *key.data)

    def _start(self, connection: socket.socket, handle: Handler, open_ones: threading.BoundedSemaphore) -> None:
        """Serve the connection on a thread of its own, unless its listener has ``MAX_OPEN`` already: an agent
        holding thousands open spent the harness's file descriptors and threads, and failed the whole run."""
        if not open_ones.acquire(blocking=False):
            connection.close()
            return
        connection.setblocking(True)
        try:
            threading.Thread(target=_serve, args=(handle, connection, open_ones), daemon=True).start()
        except RuntimeError:  # no thread to be had
            connection.close()
            open_ones.release()


def _serve(handle: Handler, connection: socket.socket, open_ones: threading.BoundedSemaphore) -> None:
    try:
        with connection, contextlib.suppress(OSError):
            handle(connection)
    finally:
        open_ones.release()


@functools.cache
def acceptor() -> Acceptor:
    return Acceptor()


# ----------------------------------------------------------------------------- the proxy


def proxy(connection: socket.socket, gate: Gate) -> None:
    """Serve one client of the egress proxy: a CONNECT tunnel or a plain HTTP request, if the gate permits."""
    connection.settimeout(HEAD_TIMEOUT_S)
    head = _read_head(connection)
    try:
        method, target, _ = _request_line(head)  # (its version checked)
        if method == "CONNECT":
            host, port = _split(target)
        else:
            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                raise ValueError(target)
            host, port = url.hostname, url.port or 80
    except ValueError:
        _reply(connection, 400, "Bad Request", "coder-eval egress proxy: a CONNECT or an absolute http:// URL\n")
        return
    if not gate.permits(host, port):
        refusal = gate.refuse(host, port)
        why = f"coder-eval egress policy: {host}:{port} is not allowed in the {refusal.phase} phase (sandbox.network)\n"
        _reply(connection, 403, "Forbidden by coder-eval egress policy", why)
        return
    if method != "CONNECT" and _body_length(head) is None:
        _reply(connection, 411, "Length Required", "coder-eval egress proxy: a request body needs Content-Length\n")
        return
    try:
        upstream = _open(host, port, tunnel=method == "CONNECT")
    except OSError as exc:
        _reply(connection, 502, "Bad Gateway", f"coder-eval egress proxy: cannot reach {host}:{port}: {exc}\n")
        return
    with upstream.sock:
        connection.settimeout(None)
        if method == "CONNECT":
            connection.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n" + upstream.already_read)
            upstream.sock.sendall(head.partition(b"\r\n\r\n")[2])  # what the client sent behind its CONNECT
            splice(connection, upstream.sock)
        else:
            direct = _upstream_proxy("http", host) is None
            target, authority = url.path or "/", f"{_in_url(host)}{'' if port == 80 else f':{port}'}"
            if not direct:  # the absolute form the gate checked, not the client's text another parser may read apart
                target = f"http://{authority}{target}"
            _one_request(
                connection, upstream.sock, head, _outgoing(head, target, url.query, None if direct else authority)
            )


def serve_forwarded(connection: socket.socket, gate: Gate) -> None:
    """A connection a container's forwarder relays (docker): its first line names the port it came to there.

    Anything in the container can connect to the forwarder's socket and say any port: each is checked here.
    """
    connection.settimeout(HEAD_TIMEOUT_S)
    line = b""
    while not line.endswith(b"\n") and len(line) < 16:
        chunk = connection.recv(1)
        if not chunk:
            return
        line += chunk
    port = int(line) if line.strip().isdigit() else 0
    connection.settimeout(None)
    if port == EGRESS_PORT:
        proxy(connection, gate)
    elif gate.model and port == shared_proxy().port():
        shared_proxy().serve_connection(connection)
    else:
        forward(connection, gate, port)


def forward(connection: socket.socket, gate: Gate, port: int) -> None:
    """A connection to an allowed port of the sandbox's loopback, joined to the host's same port."""
    if not gate.permits(LOOPBACK, port):
        gate.refuse(LOOPBACK, port)
        return
    with socket.create_connection((LOOPBACK, port), timeout=CONNECT_TIMEOUT_S) as upstream:
        upstream.settimeout(None)
        splice(connection, upstream)


def splice(one: socket.socket, other: socket.socket) -> None:
    """Copy both ways until both sides are done (a side's end of file is passed on as a half close)."""
    peers = {one: other, other: one}
    with selectors.DefaultSelector() as selector:
        for side in peers:
            selector.register(side, selectors.EVENT_READ)
        reading = 2
        while reading:
            for key, _ in selector.select():
                side = one if key.fileobj is one else other
                data = side.recv(CHUNK)
                if data:
                    peers[side].sendall(data)
                    continue
                selector.unregister(side)
                reading -= 1
                with contextlib.suppress(OSError):
                    peers[side].shutdown(socket.SHUT_WR)


def _one_request(connection: socket.socket, upstream: socket.socket, head: bytes, outgoing: bytes) -> None:
    """A plain HTTP request sent on with its body and nothing after it, and its answer relayed back: a second
    request pipelined behind the first would reach, through the harness's own proxy, a host the gate never saw."""
    length = _body_length(head) or 0
    body = head.partition(b"\r\n\r\n")[2][:length]
    upstream.sendall(outgoing + body)
    remaining = length - len(body)
    while remaining > 0 and (chunk := connection.recv(min(CHUNK, remaining))):
        upstream.sendall(chunk)
        remaining -= len(chunk)
    while chunk := upstream.recv(CHUNK):
        connection.sendall(chunk)


def _body_length(head: bytes) -> int | None:
    """A request's body length (0 without a body); None when it is chunked, which is not relayed."""
    fields = head.partition(b"\r\n\r\n")[0].split(b"\r\n")[1:]
    names = {name.strip().lower(): value.strip() for name, _, value in (line.partition(b":") for line in fields)}
    if b"transfer-encoding" in names:
        return None
    length = names.get(b"content-length", b"0")
    return int(length) if length.isdigit() else None


def _read_head(connection: socket.socket) -> bytes:
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = connection.recv(CHUNK)
        if not chunk or len(head) > HEAD_LIMIT:
            raise OSError("no complete request head")
        head += chunk
    return head


def _request_line(head: bytes) -> tuple[str, str, str]:
    """A head's method, target and version, of a head whose lines all end in CRLF and whose version is HTTP/1.x: a
    bare LF or a longer version could carry another request past the gate to a parser that splits it there."""
    fields = head.partition(b"\r\n\r\n")[0]
    if re.search(rb"[^\r]\n|\r[^\n]", fields + b"\r\n"):
        raise ValueError("a line of the head that does not end in CRLF")
    method, target, version = fields.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise ValueError(version)
    return method, target, version


def _outgoing(head: bytes, target: str, query: str, authority: str | None) -> bytes:
    """The request's head with ``target`` (origin-form for the origin, absolute for the harness's proxy), closed
    after the answer; the client's proxy fields are not sent on, nor, to the harness's proxy (``authority``),
    its own Host: one that prefers Host to the URL would go where the gate never looked."""
    first, rest = head.split(b"\r\n", 1)
    method, _, version = first.split(b" ", 2)
    fields = rest.partition(b"\r\n\r\n")[0]
    dropped = (b"proxy-", b"connection:") + ((b"host:",) if authority else ())
    kept = [line for line in fields.split(b"\r\n") if not line.lower().startswith(dropped)]
    if authority:
        kept.insert(0, f"Host: {authority}".encode("latin-1"))
    sent = (target + (f"?{query}" if query else "")).encode("latin-1")
    return b"\r\n".join([b" ".join([method, sent, version]), *kept, b"Connection: close"]) + b"\r\n\r\n"


def _in_url(host: str) -> str:
    return f"[{host}]" if ":" in host else host  # an IPv6 address


@dataclass
class Upstream:
    """A connection on to the host, and what came on it before the client's first bytes (past a proxy's 200)."""

    sock: socket.socket
    already_read: bytes = b""


def _open(host: str, port: int, tunnel: bool) -> Upstream:
    """A connection to host:port, through the harness's own proxy when it has one (HTTPS_PROXY, HTTP_PROXY)."""
    through = _upstream_proxy("https" if tunnel else "http", host)
    if through is None:
        return Upstream(socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S))
    upstream = socket.create_connection(through, timeout=CONNECT_TIMEOUT_S)
    already_read = b""
    if tunnel:
        upstream.sendall(f"CONNECT {_in_url(host)}:{port} HTTP/1.1\r\nHost: {_in_url(host)}:{port}\r\n\r\n".encode())
        answer, _, already_read = _read_head(upstream).partition(b"\r\n\r\n")
        status = answer.split(b" ", 2)
        if len(status) < 2 or status[1] != b"200":
            upstream.close()
            raise OSError(f"the harness's proxy refused the tunnel: {b' '.join(status[1:2]).decode()}")
    upstream.settimeout(None)
    return Upstream(upstream, already_read)


def _upstream_proxy(scheme: str, host: str) -> tuple[str, int] | None:
    """The harness's own proxy for ``scheme`` (its environment), unless NO_PROXY exempts ``host``."""
    url = urllib.request.getproxies_environment().get(scheme)
    if not url or urllib.request.proxy_bypass_environment(host):  # type: ignore[attr-defined]  # (not in typeshed)
        return None
    parsed = urlsplit(url if "://" in url else f"http://{url}")
    return (parsed.hostname or LOOPBACK, parsed.port or 80) if parsed.hostname else None


def _reply(connection: socket.socket, status: int, reason: str, text: str) -> None:
    body = text.encode()
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    connection.sendall(head.encode() + body)
