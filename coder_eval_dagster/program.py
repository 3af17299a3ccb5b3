"""The `coder-eval` program: a short-lived process, started and ended without the interpreter's idle work.

Two costs that a one-row run otherwise pays (measured in docs/performance.md):

- Start-up imports Dagster and its storage, about 200,000 long-lived
  objects; the cyclic garbage collector would walk them again and again
  while they load (~0.2 s). It is off until :func:`startup.imports_done`, which
  moves everything loaded so far out of its reach (``gc.freeze``) and turns
  it back on for the run itself.
- Tearing the interpreter down frees those objects one by one (~0.45 s).
  Once the command has returned, its threads are joined, the ``atexit``
  handlers run (logging, Dagster's and SQLAlchemy's clean-ups) and the
  standard streams are flushed, the process ends with ``os._exit``: every
  file the command wrote is already closed.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from typing import Any, TextIO

from . import startup
from .exit_codes import INTERRUPTED

log = logging.getLogger(__name__)


def main() -> None:
    signal.signal(signal.SIGTERM, _interrupt)  # a CI's cancel is a Ctrl-C, before and after Dagster's run as in it
    signal.signal(signal.SIGINT, _interrupt)  # while the modules load; then Python's own (asyncio.run looks for it)
    sys.stderr = _BestEffort(sys.stderr)
    threading.excepthook = _thread_failed
    try:
        startup.pause_collection()
        from .cli import main as run_command

        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = run_command()
    except BaseException as exc:  # while the command's modules load, before it handles one itself
        interrupt = KeyboardInterrupt
        if isinstance(exc, SystemExit) or not (
            isinstance(exc, interrupt) or isinstance(exc.__cause__, interrupt) or _SIGNALLED.is_set()
        ):  # (a Ctrl-C inside a class's making, after the modules loaded: pydantic's RuntimeError, as before)
            raise
        code = _interrupted()
    exit_now(code)


class _BestEffort:
    """stderr, whose reader may go away (``2>&1 | head -1``): its lines are lost then, never the command's outcome. A
    run's next progress line raised BrokenPipeError, which ended the run unfinished with exit 0."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            return len(text)

    def flush(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _thread_failed(args: threading.ExceptHookArgs) -> None:
    """A thread's uncaught error said in one warning (redacted, as every warning), its traceback in the log (``-v``,
    ``--log-file``): the thread a package's agent left behind, refused the sandbox once its phase was over, printed
    a traceback on the user's terminal."""
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    log.warning("a thread (%s) ended on an error: %s: %s", name, args.exc_type.__name__, args.exc_value)
    log.debug("the thread's traceback", exc_info=args.exc_value)


# Set by a SIGINT or SIGTERM: the error it raised may reach ``main`` as another one. Inside a class's making pydantic
# says it as its RuntimeError; inside pydantic_core's import of the datetime C API, pyo3 says it as a PanicException
# (a BaseException), which printed a Rust panic and exited 1 for a CI's cancel.
_SIGNALLED = threading.Event()


def _interrupt(signum: int, frame: object) -> None:
    _SIGNALLED.set()
    raise KeyboardInterrupt


def _interrupted() -> int:
    print("coder-eval: interrupted", file=sys.stderr)
    return INTERRUPTED


INTERRUPTED_GRACE_S = 5.0  # how long an interrupted command waits for its threads before it ends anyway


def exit_now(code: int) -> None:
    """End the process once everything the command started has finished (see the module docstring); a Ctrl-C
    while waiting for that ends it at once, in one line. An interrupted command waits for its threads a little
    only: one stuck in Python (a criterion's computation) would keep a CI's cancel waiting for good, though every
    process the run started is already stopped and what finished is written."""
    try:
        if code == INTERRUPTED:
            _join_threads(INTERRUPTED_GRACE_S)
        else:
            # What the interpreter's own exit does first: wake idle pools, join non-daemon threads.
            threading._shutdown()  # type: ignore[attr-defined]  # private to CPython, not in typeshed
        atexit._run_exitfuncs()
    except KeyboardInterrupt:
        code = _interrupted()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing left to say
            stream.flush()
    os._exit(code)


def _join_threads(seconds: float) -> None:
    """Wait for the process's other non-daemon threads, ``seconds`` at most in all."""
    deadline = time.monotonic() + seconds
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
