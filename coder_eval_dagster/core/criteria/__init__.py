"""Criterion types: one module each; importing it registers its model and check (see registry.py).

The modules are imported in alphabetical order; a type registers when its
module is first imported (``file_check`` after the ``file_*`` modules it
imports). That registration order is the schema union's and that of the
type names a message lists; docs/task-format.md follows the guide's order.

Parse a criterion with ``criterion_union()``, the union of the types
registered when it is called (an installed package's too, registered after
the built-ins: core/__init__.py); a union kept here from import time would
refuse them.
"""

from __future__ import annotations

from ..models.criterion import CriterionBase, criterion_union, on_change
from . import (  # noqa: F401  (imported to register)
    agent_judge,
    classification_match,
    cli_called,
    command_executed,
    commands_efficiency,
    file_check,
    file_contains,
    file_exists,
    file_matches_regex,
    import_check,
    json_check,
    llm_judge,
    reference_comparison,
    run_command,
    skill_triggered,
    uipath_eval,
)
from .outcome import Outcome
from .registry import REGISTRY, checks, unregister

__all__ = ["REGISTRY", "CriterionBase", "Outcome", "checks", "criterion_union", "on_change", "unregister"]
