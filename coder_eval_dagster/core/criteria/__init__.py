"""Criterion types: one module each; importing it registers its model and check (see registry.py).

The import order below is the order of the docs and of the schema's union.
"""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import Field

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
    json_check,
    llm_judge,
    reference_comparison,
    run_command,
    skill_triggered,
    uipath_eval,
)
from .base import CriterionBase
from .context import Outcome
from .registry import REGISTRY, checks, on_change, unregister


def criterion_union() -> Any:
    """The discriminated union of every registered criterion model (what ``success_criteria`` holds)."""
    return Annotated[Union[tuple(kind.model for kind in REGISTRY.values())], Field(discriminator="type")]  # noqa: UP007


Criterion = criterion_union()

__all__ = ["REGISTRY", "Criterion", "CriterionBase", "Outcome", "checks", "criterion_union", "on_change", "unregister"]
