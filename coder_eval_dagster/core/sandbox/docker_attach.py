"""Run an agent CLI inside an evaluation's container, attached to this process's stdio.

The agent SDKs start their CLI as a local subprocess and talk to it over
stdin/stdout. Under the docker driver that subprocess is this module: it
execs the CLI in the container through the engine's API (no docker CLI),
copies stdin in and the CLI's stdout/stderr out, and exits with its exit
code, so the CLI and every tool it runs live in the container. It forwards
its own environment, which the isolation wrapper has already cut down to the
agent's allow-list. It ends when its caller (``stdio_relay``) does, even by
``kill -9``: the exec's connection closes, and the CLI's stdin ends, as when
the relay stops it.

    python -m coder_eval_dagster.core.sandbox.docker_attach SPEC_JSON CLI [ARG...]

SPEC_JSON: {"container": id, "user": "uid:gid", "docker_host": str | null, "workdir": the CLI's working folder in
the container}.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
from typing import Any, cast

from ..stdio_relay import hang_up_with_caller

STDIN_CHUNK = 65536


def _pump_stdin(sock: socket.socket) -> None:
    """Copy our stdin into the exec until EOF, then half-close so the CLI sees EOF too."""
    try:
        while chunk := os.read(0, STDIN_CHUNK):
            sock.sendall(chunk)
    except OSError:
        return
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)


def attach(spec: dict[str, Any], argv: list[str]) -> int:
    import docker
    from docker.utils.socket import frames_iter

    if spec.get("docker_host"):
        os.environ["DOCKER_HOST"] = spec["docker_host"]
    api = docker.from_env(timeout=None).api  # type: ignore[arg-type]  # None: no timeout (the stubs say int)
    environment = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    exec_id = api.exec_create(
        spec["container"], argv, stdin=True, environment=environment, workdir=spec["workdir"], user=spec["user"]
    )["Id"]
    stream = api.exec_start(exec_id, socket=True)
    # docker-py's SocketIO wraps the connection's socket in _sock; its other streams are socket-like themselves.
    raw = cast(socket.socket, getattr(stream, "_sock", stream))
    threading.Thread(target=_pump_stdin, args=(raw,), daemon=True).start()
    outputs = {1: sys.stdout.buffer, 2: sys.stderr.buffer}
    for kind, data in frames_iter(stream, tty=False):  # type: ignore[no-untyped-call]  # untyped in the stubs
        out = outputs.get(kind, sys.stderr.buffer)
        out.write(data)
        out.flush()
    code = api.exec_inspect(exec_id)["ExitCode"]
    return 1 if code is None else code


def main() -> None:
    hang_up_with_caller()  # (SIGHUP's default: this process ends, and the exec's connection with it)
    spec, argv = json.loads(sys.argv[1]), sys.argv[2:]
    sys.exit(attach(spec, argv))


if __name__ == "__main__":
    main()
