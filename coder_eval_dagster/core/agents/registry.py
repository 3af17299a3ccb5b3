"""The one registry of agent types: each name with the module that runs it, registered with the format.

Each type names the module that runs it (``run(AgentInput) -> AgentOutput``),
imported on first use: an agentless run never pays for an agent SDK's import.
``none`` has no module: an agentless task runs no agent at all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from ..models.agent import AGENT_TYPES, DEFAULT_AGENT_TYPE

if TYPE_CHECKING:
    from .base import AgentInput, AgentOutput

AGENT_MODULES: dict[str, str | None] = {
    "claude-code": "claude_code",
    "codex": "codex",
    "replay": "replay",
    "none": None,
}
for _name in AGENT_MODULES:
    AGENT_TYPES.register(_name)
__all__ = ["AGENT_MODULES", "AGENT_TYPES", "DEFAULT_AGENT_TYPE", "runner"]

Runner = Callable[["AgentInput"], Coroutine[Any, Any, "AgentOutput"]]  # an async def (asyncio.run takes its call)


def runner(kind: str) -> Runner | None:
    """The coroutine function that runs an agent of this type (None for ``none``)."""
    module = AGENT_MODULES[kind]
    return None if module is None else importlib.import_module(f".{module}", __package__).run
