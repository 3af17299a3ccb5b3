"""Criterion types: one module each; importing it registers its model and check (see registry.py).

The import order below is the order of the docs and of the schema's union.
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

Criterion = criterion_union()

__all__ = ["REGISTRY", "Criterion", "CriterionBase", "Outcome", "checks", "criterion_union", "on_change", "unregister"]
