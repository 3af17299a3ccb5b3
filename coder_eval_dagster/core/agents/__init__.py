"""Agents behind one async interface; the types are registered in registry.py and nowhere else."""

from .registry import AGENT_TYPES, DEFAULT_AGENT_TYPE, runner

__all__ = ["AGENT_TYPES", "DEFAULT_AGENT_TYPE", "runner"]
