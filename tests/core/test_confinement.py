"""The tempdir driver's file view and network policy in-process: what a command sees, may change, and reaches.

The probes through the installed CLI are in tests/system/test_security_confinement.py; these check the
parts one at a time: the neutral path, the read-only system, what root in there still cannot do, the
policy per phase (the package index in setup only), the egress proxy's answers, the format.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import ValidationError

from coder_eval_dagster.core.models.results import CommandRun
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.sandbox import containment
from coder_eval_dagster.core.sandbox.egress import EGRESS_PORT, NPM, PYPI, gate_for
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox

from ..support.helpers import agentless_task, criterion, evaluate_task

# Talks to the egress proxy by hand: each request line, then (a tunnel opened) a request through the tunnel.
TALK = """
import socket
def answer(proxy):
    data = b""
    while chunk := proxy.recv(4096):
        data += chunk
    return data
for request in {requests}:
    with socket.create_connection(("127.0.0.1", {port})) as proxy:
        proxy.sendall(request.encode() + b" HTTP/1.1\\r\\n\\r\\n")
        opened = proxy.recv(4096)
        if opened.startswith(b"HTTP/1.1 200"):
            proxy.sendall(b"GET /tunnelled HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
            got = answer(proxy)
        else:
            got = opened + answer(proxy)
        head, _, body = got.partition(b"\\r\\n\\r\\n")
        print(head.split(b"\\r\\n")[0].decode(), body.decode().strip())
"""


class _Answer(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = f"served {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextlib.contextmanager
def _server() -> Iterator[int]:
    """An HTTP server on the host's loopback: its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def _box(folder: Path, network: dict[str, Any]) -> Iterator[TempdirSandbox]:
    """A sandbox in its pre_run phase; its namespace (and the spares) ended afterwards."""
    sandbox = TempdirSandbox(folder / "sandbox", SandboxConfig.model_validate({"python": None, **network}))
    sandbox.create(folder)
    sandbox.set_phase("pre_run")
    try:
        yield sandbox
    finally:
        containment.release(folder)
        containment.end_spare()


@pytest.fixture
def box(tmp_path: Path) -> Iterator[TempdirSandbox]:
    with _box(tmp_path / "run" / "variant-b" / "row-answer-42" / "01", {}) as sandbox:
        yield sandbox


def test_the_sandbox_shows_at_a_path_that_names_no_variant_or_row(box: TempdirSandbox) -> None:
    """(/proc/self/mountinfo still names the folder the sandbox is mounted from: docs/running.md, Security model.)"""
    done = box.run("pwd; env; ls -a / /tmp /var/tmp", timeout=10)
    assert done.ok and done.stdout.splitlines()[0] == "/sandbox"
    assert "variant-b" not in done.stdout and "row-answer-42" not in done.stdout and str(box.root) not in done.stdout


def test_the_system_is_read_only_and_what_only_root_may_read_shows_empty(box: TempdirSandbox) -> None:
    done = box.run("touch /usr/x /etc/x /x; echo w > /sandbox/w; cat /etc/shadow > shadow 2>&1; ls /home /run", 10)
    assert done.stderr.count("Read-only file system") == 3
    assert (box.root / "w").read_text() == "w\n"
    shadow = (box.root / "shadow").read_text()  # only its owner may read it, and commands run as its owner (root)
    assert "root:" not in shadow and "Permission denied" in shadow
    assert "/home" in done.stderr and "/run" in done.stderr  # not there at all


def test_root_in_there_cannot_change_its_view_nor_make_a_user_namespace_of_its_own(box: TempdirSandbox) -> None:
    done = box.run(
        "mount -o remount,rw /usr; umount /sandbox; mount -t tmpfs x /tmp; "
        "unshare --user --map-root-user --mount sh -c 'umount /etc/shadow; cat /etc/shadow'; echo done",
        timeout=10,
    )
    assert "done" in done.stdout and "root:" not in done.stdout
    assert done.stderr.count("permission denied") >= 2  # (its mounts)
    assert "unshare failed: No space left on device" in done.stderr  # the namespace's limit on user namespaces: 0


def test_the_setup_phase_reaches_the_package_index_only_and_later_phases_what_the_task_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _server() as index, _server() as allowed:
        monkeypatch.setenv("UV_INDEX_URL", f"http://127.0.0.1:{index}/simple")
        fetch = "python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read())'"
        seen = {}
        with _box(tmp_path / "e", {"network": {"allow": [f"127.0.0.1:{allowed}"]}}) as box:
            for phase in ("setup", "pre_run", "score"):
                box.set_phase(phase)
                seen[phase] = [box.run(f"{fetch} http://127.0.0.1:{port}/x", timeout=20) for port in (index, allowed)]
    assert [run.ok for run in seen["setup"]] == [True, False]
    assert [run.ok for run in seen["pre_run"]] == [False, True] == [run.ok for run in seen["score"]]
    assert b"served /x" in seen["pre_run"][1].stdout.encode()
    refused = {(r.port, r.phase) for r in box.take_refused()}
    assert refused == {(allowed, "setup"), (index, "pre_run"), (index, "score")}


def test_the_egress_proxy_tunnels_an_allowed_host_and_says_why_it_refuses_another(tmp_path: Path) -> None:
    with _server() as allowed, _server() as other:
        requests = [f"CONNECT 127.0.0.1:{allowed}", f"CONNECT 127.0.0.1:{other}", "GET /relative", "GET ftp://x/"]
        with _box(tmp_path / "e", {"network": {"allow": [f"localhost:{allowed}"]}}) as box:
            (box.root / "talk.py").write_text(TALK.format(port=EGRESS_PORT, requests=requests))
            box.set_phase("agent")
            done = box.run("python3 talk.py", timeout=20)
    lines = done.stdout.splitlines()
    assert lines[0] == "HTTP/1.0 200 OK served /tunnelled", done.stdout  # localhost:PORT allows 127.0.0.1:PORT
    assert lines[1].startswith("HTTP/1.1 403 Forbidden by coder-eval egress policy") and "agent phase" in lines[1]
    assert lines[2].startswith("HTTP/1.1 400") and lines[3].startswith("HTTP/1.1 400")
    assert f"127.0.0.1:{other} refused by the sandbox's network policy (agent)" in done.stderr


def test_no_network_at_all_refuses_even_the_package_index(tmp_path: Path) -> None:
    with _box(tmp_path / "e", {"network": "none"}) as box:
        box.set_phase("setup")
        done = box.run("curl -sS -m 5 https://pypi.org/simple/ -o /dev/null", timeout=20)
    assert not done.ok and "pypi.org:443 refused by the sandbox's network policy (setup)" in done.stderr


def test_an_open_network_is_the_hosts_and_the_file_view_stays(tmp_path: Path) -> None:
    with _server() as port, _box(tmp_path / "e", {"network": {"open": True}}) as box:
        done = box.run(f"curl -sS -m 5 http://127.0.0.1:{port}/open; echo; env | grep -c :{EGRESS_PORT}; ls /root", 20)
    assert done.stdout.startswith("served /open\n") and "\n0\n" in done.stdout  # no egress proxy given
    assert ".aws" not in done.stdout and ".ssh" not in done.stdout


def test_a_hidden_file_a_command_failed_on_is_said_to_be_hidden(box: TempdirSandbox) -> None:
    done = box.run("ls /run /no/such/file", timeout=10)  # /run: the host's services' sockets (docker's)
    assert "[coder-eval: /run is not visible in the sandbox (file confinement)]" in done.stderr
    assert "/no/such/file is not visible" not in done.stderr  # what does not exist anywhere is only missing


def test_a_host_file_in_tmp_a_command_failed_on_is_said_to_be_hidden(box: TempdirSandbox, tmp_path: Path) -> None:
    """The sandbox's /tmp is its own: a host file there was said to be nothing, as if it did not exist."""
    host_file = tmp_path / "decoy.txt"  # (pytest's tmp_path is under the host's /tmp)
    host_file.write_text("host\n")
    assert str(host_file).startswith("/tmp/")
    done = box.run(f"cat {host_file}", timeout=10)
    assert f"[coder-eval: {host_file} is not visible in the sandbox (file confinement: its /tmp is its own)]" in (
        done.stderr
    )


def test_refusals_land_in_the_result_with_their_phase_and_are_no_error(tmp_path: Path) -> None:
    result = evaluate_task(
        tmp_path,
        agentless_task(
            pre_run=[{"command": "curl -sS -m 5 https://example.com/ || true"}],
            post_run=[{"command": "curl -sS -m 5 http://example.org/ || true"}],
            success_criteria=[criterion("run_command", command="curl -sS -m 5 https://example.net/; true")],
        ),
    )
    assert result.final_status == "SUCCESS", result.error
    assert [(r.host, r.port, r.phase) for r in result.refused_connections] == [
        ("example.com", 443, "pre_run"),
        ("example.net", 443, "score"),
        ("example.org", 80, "post_run"),
    ]


def test_the_endpoint_the_harness_points_its_agent_at_is_reached_in_the_agent_phase_only(tmp_path: Path) -> None:
    """(Claude Code's own telemetry: the harness names its endpoint, the task need not allow it.)"""
    fetch = "curl -sS -m 5 http://127.0.0.1:{port}/telemetry"
    with _server() as port, _box(tmp_path / "e", {}) as box:
        box.grant(f"http://127.0.0.1:{port}/v1")
        seen = {}
        for phase in ("pre_run", "agent", "score"):
            box.set_phase(phase)
            seen[phase] = box.run(fetch.format(port=port), timeout=20)
    assert seen["agent"].stdout == "served /telemetry", seen["agent"]
    assert not seen["pre_run"].ok and not seen["score"].ok
    assert {(r.port, r.phase) for r in box.take_refused()} == {(port, "pre_run"), (port, "score")}


def test_an_agents_installed_tools_show_read_only_in_its_home(tmp_path: Path) -> None:
    """An agent CLI installed outside the view (opencode, in the user's cache) is shown where its home says."""
    tools = tmp_path / "cache" / "tool"
    tools.mkdir(parents=True)
    (tools / "version").write_text("tool 1.0\n")
    home = Path(tempfile.mkdtemp(prefix="coder-eval-test-", dir="/tmp"))
    try:
        with _box(tmp_path / "e", {}) as box:
            prefix = box.agent_launcher(home, {tools: home / "tool"})
            script = f"cat {home}/tool/version; ls {tools} || true; touch {home}/tool/new; touch {home}/mine"
            done = subprocess.run([*prefix, "sh", "-c", script], capture_output=True, text=True, timeout=20)
    finally:
        shutil.rmtree(home)
    assert done.stdout == "tool 1.0\n", done
    assert f"{tools}': No such file" in done.stderr  # where it is on this machine: not in the view
    assert "Read-only file system" in done.stderr and not (tools / "new").exists()
    assert "mine" not in done.stderr  # the home itself is the agent's to write


def test_setup_reaches_npms_registry_only_for_a_task_with_node_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NPM_CONFIG_REGISTRY", "npm_config_registry", "BUN_CONFIG_REGISTRY", "UV_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    plain, node = (gate_for(SandboxConfig.model_validate(data)) for data in ({}, {"node": {"env_packages": ["x"]}}))
    assert plain is not None and node is not None
    assert plain.index == set(PYPI) and node.index == set(PYPI) | set(NPM)
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", "http://npm.internal:8080/")
    mirror = gate_for(SandboxConfig.model_validate({"node": {"env_packages": ["x"]}}))
    assert mirror is not None and mirror.index == set(PYPI) | {("npm.internal", 8080)}


@pytest.mark.parametrize(
    ("network", "problem"),
    [
        ({"allow": ["example.com"]}, "is not host:port"),
        ({"allow": ["example.com:0"]}, "is not host:port"),
        ({"allow": [":443"]}, "is not host:port"),
        ({"allow": ["h :80"]}, "is not host:port"),
        ({"allow": ["a..b:80"]}, "is not host:port"),
        ({"allow": ["[x]:80"]}, "is not host:port"),
        ({"allow": ["*:443"]}, "a wildcard matches no host"),
        ({"allow": ["*.example.com:443"]}, "a wildcard matches no host"),
        ({"allow": ["a.example:1"], "open": True}, "an open network allows everything"),
        ({"allowed": []}, "Extra inputs are not permitted"),
        ("overlay", "unknown network 'overlay': use bridge, none, host, or a block"),
        (5, "unknown network 5: use bridge, none, host, or a block"),  # (was two lines, one the literal arm's)
    ],
)
def test_a_network_block_is_checked_at_load(network: Any, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        SandboxConfig.model_validate({"network": network})


def test_the_default_network_is_confined_and_the_schema_shows_the_block() -> None:
    assert SandboxConfig().network.model_dump() == {"allow": [], "open": False}  # type: ignore[union-attr]
    schema = SandboxConfig.model_json_schema()
    assert "NetworkPolicy" in schema["$defs"] and set(schema["$defs"]["NetworkPolicy"]["properties"]) == {
        "allow",
        "open",
    }


def test_nothing_of_the_host_listens_where_the_sandbox_looks(box: TempdirSandbox) -> None:
    """Its loopback is its own: a port the harness's process listens on is not there."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        done = box.run(f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5)'", timeout=10)
    assert not done.ok and "ConnectionRefusedError" in done.stderr


class _Recorder(BaseHTTPRequestHandler):
    """The harness's own proxy: answers every request of a kept-alive connection, and records its line."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[str]] = []
    hosts: ClassVar[list[str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(self.requestline)
        self.hosts.append(self.headers.get("Host", ""))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


def _sent_through_the_harness_proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: str) -> CommandRun:
    """``request`` (escaped for a bytes literal) sent by a sandbox command to the egress proxy of a sandbox that
    allows allowed.example:80, behind the harness's own proxy (a ``_Recorder``): the command's run."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Recorder.seen.clear()
    _Recorder.hosts.clear()
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.server_address[1]}")
    talk = (
        "import socket\n"
        f"with socket.create_connection(('127.0.0.1', {EGRESS_PORT})) as proxy:\n"
        f"    proxy.sendall(b'{request}')\n"
        "    print(proxy.recv(4096).split(b' ')[1].decode())\n"
    )
    try:
        with _box(tmp_path / "e", {"network": {"allow": ["allowed.example:80"]}}) as box:
            (box.root / "talk.py").write_text(talk)
            box.set_phase("agent")
            done = box.run("python3 talk.py", timeout=20)
            time.sleep(0.5)  # (a second request would be on its way meanwhile)
    finally:
        server.shutdown()
        server.server_close()
    return done


def test_a_request_pipelined_behind_an_allowed_one_never_passes_the_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind the harness's own proxy, the egress proxy checked a connection's first request and relayed the rest:
    a second request on it reached a host the task does not allow."""
    pipelined = (
        "GET http://allowed.example/one HTTP/1.1\\r\\nHost: allowed.example\\r\\n\\r\\n"
        "GET http://forbidden.example/exfil HTTP/1.1\\r\\nHost: forbidden.example\\r\\n\\r\\n"
    )
    done = _sent_through_the_harness_proxy(tmp_path, monkeypatch, pipelined)
    assert done.stdout.strip() == "200", (done.stdout, done.stderr)
    assert _Recorder.seen == ["GET http://allowed.example/one HTTP/1.1"]


def test_the_harness_proxy_gets_the_url_the_gate_checked_not_the_clients_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``http://127.0.0.1:1\\@allowed.example/`` is allowed.example to the gate's parser and 127.0.0.1 to a WHATWG
    one: the raw text went on to the harness's proxy, whose parser decides where it goes."""
    request = "GET http://127.0.0.1:18432\\\\\\\\@allowed.example/p?q=1 HTTP/1.1\\r\\nHost: evil.example\\r\\n\\r\\n"
    done = _sent_through_the_harness_proxy(tmp_path, monkeypatch, request)
    assert done.stdout.strip() == "200", (done.stdout, done.stderr)
    assert _Recorder.seen == ["GET http://allowed.example/p?q=1 HTTP/1.1"]
    assert _Recorder.hosts == ["allowed.example"]  # (the client's Host: evil.example is not sent on)


def test_a_request_smuggled_behind_bare_line_feeds_never_reaches_the_harness_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request line's "version" carried LF-ended lines and a second request to a host the gate never saw; a
    proxy that accepts a bare LF (Python's own) served both."""
    smuggled = (
        "GET http://allowed.example/first HTTP/1.1\\nHost: allowed.example\\n\\n"
        "GET http://forbidden.example/smuggled HTTP/1.1\\nHost: forbidden.example\\n\\n"
        "\\r\\nHost: allowed.example\\r\\n\\r\\n"
    )
    done = _sent_through_the_harness_proxy(tmp_path, monkeypatch, smuggled)
    assert done.stdout.strip() == "400", (done.stdout, done.stderr)
    assert _Recorder.seen == []


def test_bytes_sent_with_a_connect_reach_the_allowed_host(tmp_path: Path) -> None:
    """A client that sends its first bytes in the CONNECT's own write got the 200 and nothing more: what the
    proxy read past the head was dropped."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        greeting = "GET / HTTP/1.0\\r\\n\\r\\n"
        talk = (
            "import socket\n"
            f"with socket.create_connection(('127.0.0.1', {EGRESS_PORT})) as proxy:\n"
            f"    proxy.sendall(b'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\n{greeting}')\n"
            "    proxy.shutdown(socket.SHUT_WR)\n"
            "    print(proxy.recv(4096))\n"
        )
        received: list[bytes] = []

        def serve_one() -> None:
            client, _ = listener.accept()
            with client:
                client.settimeout(10)
                received.append(client.recv(4096))

        server = threading.Thread(target=serve_one, daemon=True)
        server.start()
        with _box(tmp_path / "e", {"network": {"allow": [f"127.0.0.1:{port}"]}}) as box:
            (box.root / "talk.py").write_text(talk)
            box.set_phase("agent")
            done = box.run("python3 talk.py", timeout=20)
        server.join(10)
    assert b"200 Connection established" in done.stdout.encode(), (done.stdout, done.stderr)
    assert received == [b"GET / HTTP/1.0\r\n\r\n"]
