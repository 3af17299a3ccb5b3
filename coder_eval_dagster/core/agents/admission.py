"""Whether an agent CLI's next model request may go, asked by the model proxy before it forwards one.

A CLI reports a round trip's usage (its turn's events) before it sends the
next request, but the harness reads those reports on another thread: without
waiting for them, a budget the last turn spent, or a stop it caused, let one
more turn through (and be paid for).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

ADMIT_WAIT_S = 5.0  # how long a request waits for the reports of the turns before it (a retry is no new turn)


class ModelRequests:
    """The requests admitted and the round trips reported; ``stopping`` says whether the agent must stop."""

    def __init__(self, stopping: Callable[[], bool]) -> None:
        self.stopping = stopping
        self.admitted = 0
        self.reported = 0
        self.read = threading.Condition()  # held while a report is read; the proxy's thread waits on it

    @contextmanager
    def reporting(self) -> Iterator[None]:
        """(On the reader's thread.) Read a report in the block: a request waiting for it is woken after."""
        with self.read:
            yield
            self.read.notify_all()

    def admit(self) -> bool:
        """(On the proxy's thread.) Once the admitted requests' reports are read, a stop they caused refuses it."""
        with self.read:
            self.read.wait_for(lambda: self.reported >= self.admitted or self.stopping(), ADMIT_WAIT_S)
            if self.stopping():
                return False
            self.admitted += 1
            return True
