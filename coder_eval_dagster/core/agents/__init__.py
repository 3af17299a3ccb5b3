"""Agents behind one async interface; the types are registered in registry.py (what runs each).

A built-in type's facts are also kept where they are used: which types go
through the run's route and need which key (run_context.py), the telemetry
provider (telemetry.py ``provider_name``), the fields each type reads
(models/agent.py; evaluation.py ``AGENT_FIELD_TYPES``), codex's warnings
(resolution.py). docs/architecture.md ("an agent type") lists them.
"""

from .registry import AGENT_TYPES, DEFAULT_AGENT_TYPE, runner

__all__ = ["AGENT_TYPES", "DEFAULT_AGENT_TYPE", "runner"]
