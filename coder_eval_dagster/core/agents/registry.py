"""The one registry of agent types: the task model's ``type``, the CLI help and the runtime read it.

Each type names the module that runs it (``run(AgentInput) -> AgentOutput``),
imported on first use: an agentless run never pays for an agent SDK's import.
``none`` has no module: an agentless task runs no agent at all.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import AgentInput, AgentOutput

AGENT_MODULES: dict[str, str | None] = {
    "claude-code": "claude_code",
    "codex": "codex",
    "replay": "replay",
    "none": None,
}
AGENT_TYPES = tuple(AGENT_MODULES)
DEFAULT_AGENT_TYPE = "claude-code"

Runner = Callable[["AgentInput"], Awaitable["AgentOutput"]]


def runner(kind: str) -> Runner | None:
    """The coroutine function that runs an agent of this type (None for ``none``)."""
    module = AGENT_MODULES[kind]
    return None if module is None else importlib.import_module(f".{module}", __package__).run
