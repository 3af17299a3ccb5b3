"""`coder-eval agents list | install TYPE`: the agent types installed, and their install steps (opencode's)."""

from __future__ import annotations

import argparse
import sys
from typing import TypeVar

from .core.agents.registry import AGENT_MODULES, AGENT_TYPES, INSTALLED_TYPES, AgentLoadError, agent
from .core.plugins import AGENTS_GROUP


def cmd_agents_list(args: argparse.Namespace) -> int:
    """One line per type: its name and where it comes from."""
    for name in AGENT_TYPES.names:
        print(f"{name}\t{'built-in' if name in AGENT_MODULES else f'{AGENTS_GROUP}: {INSTALLED_TYPES[name]}'}")
    return 0


def cmd_agents_install(args: argparse.Namespace) -> int:
    """Run the type's install step; a failure is one line, exit 1."""
    try:
        AGENT_TYPES.check(args.type)
        install = getattr(agent(args.type), "install", None)
    except (ValueError, AgentLoadError) as exc:
        print(f"coder-eval agents install: {exc}", file=sys.stderr)
        return 2
    if install is None:
        print(f"coder-eval agents install: agent type {args.type!r} has no install step")
        return 0
    try:
        print(install())
    except Exception as exc:  # npm, the registry or the disk refused: say so in one line
        print(f"coder-eval agents install {args.type}: {exc}", file=sys.stderr)
        return 1
    return 0


Parser = TypeVar("Parser", bound=argparse.ArgumentParser)  # the CLI's own parser class


def add_commands(subparsers: argparse._SubParsersAction[Parser]) -> None:
    agents = subparsers.add_parser("agents", help="the agent types installed, and their install steps")
    commands = agents.add_subparsers(dest="agents_command", required=True)
    commands.add_parser("list", help="the agent types agent.type accepts, and where each comes from").set_defaults(
        handler=cmd_agents_list
    )
    installing = commands.add_parser("install", help="install what an agent type runs (opencode: its pinned CLI)")
    installing.add_argument("type", help="the agent type, e.g. opencode")
    installing.set_defaults(handler=cmd_agents_install)
