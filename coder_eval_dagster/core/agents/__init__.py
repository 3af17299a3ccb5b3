"""Agents behind one async interface, registered here and nowhere else.

``none`` has no module: an agentless task runs no agent at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from . import claude_code, codex, replay
from .base import AgentInput, AgentOutput

AGENTS: dict[str, Callable[[AgentInput], Awaitable[AgentOutput]]] = {
    "replay": replay.run,
    "claude-code": claude_code.run,
    "codex": codex.run,
}

__all__ = ["AGENTS", "AgentInput", "AgentOutput"]
