"""The sandbox as an agent type a package adds holds it: the evaluation's own until the agent's phase ends, then
nothing. Such an agent is in-process code the harness cannot stop mid-call; a thread it started itself (not through
``asyncio.to_thread``, which the harness waits for) ran commands into the sandbox while it was scored, and after its
result was written. The built-in agents stop their own work, and get the sandbox itself."""

from __future__ import annotations

import functools
from typing import Any

from .base import Sandbox
from .holder import SandboxUnavailable


class SandboxLease:
    """Every member of ``sandbox`` until ``end``; after it, each access and each call of a method taken before it
    raises ``SandboxUnavailable``."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox: Sandbox | None = sandbox

    def end(self) -> None:
        self._sandbox = None

    def _held(self) -> Sandbox:
        if self._sandbox is None:
            raise SandboxUnavailable("the agent's phase is over: the sandbox is no longer the agent's to use")
        return self._sandbox

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._held(), name)
        if not callable(value):
            return value

        @functools.wraps(value)
        def while_held(*args: Any, **kwargs: Any) -> Any:
            self._held()
            return value(*args, **kwargs)

        return while_held
