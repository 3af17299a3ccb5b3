"""The one registry of agent types: the built-ins and those of installed packages, registered with the format.

A built-in type names the module that runs it; an installed package adds a
type through the ``coder_eval_dagster.agents`` entry-point group (name = the
type, value = a module, or a class instantiated without arguments, that
implements ``base.Agent``). Both are imported on first use: an agentless run
never pays for an agent SDK's import. ``none`` has no module: an agentless
task runs no agent at all. A package cannot replace a built-in type.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from ..models.agent import AGENT_TYPES, DEFAULT_AGENT_TYPE
from ..plugins import AGENTS_GROUP, installed

if TYPE_CHECKING:
    from .base import AgentInput, AgentOutput

AGENT_MODULES: dict[str, str | None] = {
    "claude-code": "claude_code",
    "codex": "codex",
    "opencode": "opencode",
    "replay": "replay",
    "none": None,
}
log = logging.getLogger(__name__)


def _installed_types() -> dict[str, str]:
    """The agent types of installed packages -> their entry point's value (``module`` or ``module:Class``)."""
    found: dict[str, str] = {}
    for entry in installed(AGENTS_GROUP):
        if entry.name in AGENT_MODULES:
            log.warning("coder-eval: left out %s = %s (%s): a built-in type", entry.name, entry.value, AGENTS_GROUP)
        else:
            found[entry.name] = entry.value
    return found


INSTALLED_TYPES = _installed_types()
for _name in [*AGENT_MODULES, *INSTALLED_TYPES]:
    AGENT_TYPES.register(_name)
AGENT_TYPES.entry_point_group = AGENTS_GROUP
__all__ = ["AGENT_MODULES", "AGENT_TYPES", "DEFAULT_AGENT_TYPE", "INSTALLED_TYPES", "AgentLoadError", "agent", "runner"]

Runner = Callable[["AgentInput"], Coroutine[Any, Any, "AgentOutput"]]  # an async def (asyncio.run takes its call)


class AgentLoadError(Exception):
    """An installed agent type that cannot be imported, or has no ``run`` coroutine function."""


def agent(kind: str) -> Any:
    """What runs an agent of this type (a module or an object with ``run``; None for ``none``)."""
    if kind in AGENT_MODULES:
        module = AGENT_MODULES[kind]
        return None if module is None else importlib.import_module(f".{module}", __package__)
    (entry,) = [entry for entry in installed(AGENTS_GROUP) if entry.name == kind]
    try:
        loaded = entry.load()
        return loaded() if isinstance(loaded, type) else loaded
    except Exception as exc:
        raise AgentLoadError(f"agent type {kind!r} ({entry.value}) could not be loaded: {exc}") from exc


def runner(kind: str) -> Runner | None:
    """The coroutine function that runs an agent of this type (None for ``none``). A plain ``def run`` is refused
    before it is called: the call would run the whole agent in the harness's thread, beyond its supervision."""
    found = agent(kind)
    if found is None:
        return None
    run = getattr(found, "run", None)
    where = f"agent type {kind!r} ({INSTALLED_TYPES.get(kind, kind)})"
    if not callable(run):
        raise AgentLoadError(f"{where} has no run(agent_input)")
    if not inspect.iscoroutinefunction(run):
        raise AgentLoadError(f"{where}: its run must be an async def (a coroutine function), not a plain def")
    run_agent: Runner = run
    return run_agent
