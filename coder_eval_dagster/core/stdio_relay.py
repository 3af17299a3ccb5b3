"""Run a command whose stdin and stdout are sockets, relayed to this process's own pipes.

An agent CLI's tools run as its user, in its namespaces: a pipe the CLI reads or
writes, any of them could open through ``/proc/<cli>/fd/0`` or ``/1`` and feed
forged messages to the harness (tool calls that never ran, usage, a result, an
agent judge's verdict). A socket cannot be opened that way (ENXIO): the CLI gets
one end of a socket pair for each, and this process, on this machine outside
the namespaces, copies between them and the pipes its caller (the agent SDK)
holds. Run as a file (``python -I stdio_relay.py COMMAND...``): it imports
nothing of the package, to start in milliseconds.

It ends the CLI when its caller dies, even by ``kill -9``: no signal says
so, but its caller alone reads its stdout, and that pipe then has no reader
(``hang_up_with_caller``; the docker driver's ``docker_attach`` watches its own).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading

CHUNK = 65536
KILL_AFTER_S = 2.0  # a CLI still running this long after the signal that should end it is killed, with its tools


def main(command: list[str]) -> int:
    into, their_in = socket.socketpair()
    out_of, their_out = socket.socketpair()
    # A group of its own, signalled whole: ``nsenter --pid`` forks the CLI and dies of a signal without passing
    # it on, so a signal to it alone left the CLI running until its namespace ended.
    child = subprocess.Popen(command, stdin=their_in.fileno(), stdout=their_out.fileno(), start_new_session=True)
    their_in.close()
    their_out.close()
    stopped: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # the caller ending the CLI ends it
        signal.signal(signum, lambda number, _frame: _signal_group(child.pid, number, stopped))
    threading.Thread(target=_to_child, args=(into,), daemon=True).start()
    hang_up_with_caller()
    _from_child(out_of)
    code = child.wait()
    if stopped:  # the CLI ended on the signal; a tool of its that ignored it would outlive this process
        _kill(child.pid, signal.SIGKILL)
    return code  # (stdout closes as this process exits: a caller seeing its end finds it ended, not killable)


def hang_up_with_caller() -> None:
    """SIGHUP to this process once nothing reads its stdout: its caller has died, ``kill -9`` included, and what
    this process started must not run on without it. A caller already dead when this is called counts too. Not
    ``PR_SET_PDEATHSIG``: it fires when the *thread* that started this process ends (the SDKs start it from their
    event loop's), and leaves a window before it is set that only the caller's pid, which this process is not
    given, would close."""
    threading.Thread(target=_hang_up_when_unread, daemon=True).start()


def _hang_up_when_unread() -> None:
    watch = select.poll()
    watch.register(1, 0)  # no event asked for: only POLLERR (a pipe with no reader) or POLLHUP (a closed peer) wake it
    watch.poll()
    os.kill(os.getpid(), signal.SIGHUP)


def _signal_group(pgid: int, number: int, stopped: list[int]) -> None:
    """The signal to the CLI's group, then SIGKILL if it is still there: a SIGKILL to this process, the caller's
    last resort, cannot be passed on, and the CLI would outlive it (and go on acting in the sandbox)."""
    stopped.append(number)
    _kill(pgid, number)
    later = threading.Timer(KILL_AFTER_S, _kill, args=(pgid, signal.SIGKILL))
    later.daemon = True  # (this process ends once the CLI has: nothing to kill then)
    later.start()


def _kill(pgid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(pgid, number)


def _to_child(into: socket.socket) -> None:
    """This process's stdin into the CLI's, then its end (the SDK closing the CLI's input)."""
    try:
        while chunk := os.read(0, CHUNK):
            into.sendall(chunk)
        into.shutdown(socket.SHUT_WR)
    except OSError:  # the CLI is gone
        pass


def _from_child(out_of: socket.socket) -> None:
    """The CLI's stdout onto this process's, until the CLI closes it."""
    try:
        while chunk := out_of.recv(CHUNK):
            _write_all(chunk)
    except OSError:  # the reader is gone
        pass


def _write_all(data: bytes) -> None:
    """All of ``data`` to stdout (a write a signal interrupts may write part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
