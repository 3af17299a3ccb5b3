"""Criterion types: one module each, registered here and nowhere else."""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from .agent_judge import AgentJudge
from .base import CriterionBase
from .classification_match import ClassificationMatch
from .cli_called import CliCalled
from .command_executed import CommandExecuted
from .commands_efficiency import CommandsEfficiency
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
        FileExists, FileContains, FileCheck, JsonCheck, RunCommand, FileMatchesRegex,
        ReferenceComparison, CommandExecuted, CliCalled, CommandsEfficiency, UipathEval,
        LlmJudge, AgentJudge, ClassificationMatch, SkillTriggered,
    )
}  # fmt: skip

Criterion = Annotated[Union[tuple(CRITERION_MODELS.values())], Field(discriminator="type")]  # noqa: UP007

__all__ = ["CRITERION_MODELS", "Criterion", "CriterionBase"]
