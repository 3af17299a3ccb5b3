"""Criterion types: one module each, registered here and nowhere else."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Annotated, Any, Union

from pydantic import Field

from . import (
    classification_match,
    cli_called,
    command_executed,
    commands_efficiency,
    file_check,
    file_contains,
    file_exists,
    file_matches_regex,
    json_check,
    reference_comparison,
    run_command,
    skill_triggered,
    uipath_eval,
)
from .agent_judge import AgentJudge
from .base import CriterionBase
from .classification_match import ClassificationMatch
from .cli_called import CliCalled
from .command_executed import CommandExecuted
from .commands_efficiency import CommandsEfficiency
from .context import CheckContext, Outcome
from .file_check import FileCheck
from .file_contains import FileContains
from .file_exists import FileExists
from .file_matches_regex import FileMatchesRegex
from .json_check import JsonCheck
from .llm_judge import LlmJudge
from .reference_comparison import ReferenceComparison
from .run_command import RunCommand
from .skill_triggered import SkillTriggered
from .uipath_eval import UipathEval

CRITERION_MODELS: dict[str, type[CriterionBase]] = {
    model.model_fields["type"].annotation.__args__[0]: model  # type: ignore[union-attr]
    for model in (
        FileExists,
        FileContains,
        FileCheck,
        JsonCheck,
        RunCommand,
        FileMatchesRegex,
        ReferenceComparison,
        CommandExecuted,
        CliCalled,
        CommandsEfficiency,
        UipathEval,
        LlmJudge,
        AgentJudge,
        ClassificationMatch,
        SkillTriggered,
    )
}

Criterion = Annotated[Union[tuple(CRITERION_MODELS.values())], Field(discriminator="type")]  # noqa: UP007

# The check of each type lives beside its model; judges have none yet (see docs).
_CHECK_MODULES: tuple[ModuleType, ...] = (
    file_exists,
    file_contains,
    file_check,
    json_check,
    run_command,
    file_matches_regex,
    reference_comparison,
    command_executed,
    cli_called,
    commands_efficiency,
    uipath_eval,
    classification_match,
    skill_triggered,
)
CHECKS: dict[str, Callable[[Any, CheckContext], Outcome]] = {
    kind: module.check
    for module in _CHECK_MODULES
    for kind, model in CRITERION_MODELS.items()
    if model.__module__ == module.__name__
}

__all__ = ["CHECKS", "CRITERION_MODELS", "CheckContext", "Criterion", "CriterionBase", "Outcome"]
