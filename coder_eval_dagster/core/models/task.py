"""The task file: the top-level model of the format."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from ..files import MAX_DATASET_BYTES, MAX_DOCUMENT_BYTES, regular_file_problem
from .agent import AgentConfig
from .base import RejectsMovedLimits, SafeId, StrictModel, file_name_problem, is_partial, rule_error, rule_errors
from .checker import CheckerContext, judge_model
from .commands import HookCommand
from .criterion import REFERENCE_DIR, CriterionBase, criterion_union, on_change
from .dataset import Dataset
from .limits import RunLimits
from .sandbox import SandboxConfig, TemplateDirSource
from .simulation import Simulation

if TYPE_CHECKING:
    # Statically a criterion is some registered model, each one a CriterionBase.
    Criterion = CriterionBase
else:
    Criterion = criterion_union()  # the criterion types registered so far (core/__init__.py registers the built-ins)
TAG_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*(:[a-z0-9]+(-[a-z0-9]+)*)?$"


def _tag(value: str) -> str:
    if not re.match(TAG_PATTERN, value):
        raise ValueError(
            f"tag {value!r} does not match pattern {TAG_PATTERN}: lowercase kebab-case, "
            "optionally namespaced as key:value (lifecycle:generate)"
        )
    return value


Tag = Annotated[str, AfterValidator(_tag)]


Problem = tuple[str, str]  # (field below the task, why): a broken rule between fields


class Reference(StrictModel):
    """A reference solution: a file relative to the task YAML, inline code, or a folder relative to the task YAML."""

    file: str | None = None
    code: str | None = None
    directory: str | None = None

    @field_validator("directory")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must name a folder")
        return None if value is None else value.strip()

    @model_validator(mode="after")
    def _exactly_one(self) -> Reference:
        if sum(v is not None for v in (self.file, self.code, self.directory)) != 1:
            raise rule_error("file", "exactly one of file, code or directory is required")
        return self


def _file_problem(info: ValidationInfo, relative: str | None, folder: bool, limit: int) -> str | None:
    """Why a task-relative file (or folder) cannot be used, when known (needs base_dir context).

    A device, FIFO or folder where a file is expected would hang or fail the
    reader, so only regular files (within ``limit`` bytes) are accepted.
    """
    base = (info.context or {}).get("base_dir")
    if not (base and relative):
        return None
    if problem := file_name_problem(relative):
        return problem
    path = Path(base) / relative
    if not path.exists():
        return f"{'folder' if folder else 'file'} not found: {relative} (relative to the task YAML)"
    if folder:
        return None if path.is_dir() else f"not a folder: {relative}"
    return regular_file_problem(path, limit)


def _code_problem(info: ValidationInfo, relative: str) -> str | None:
    """Why a reference file cannot be compared with: ``_file_problem``'s reasons, or it is empty."""
    problem = _file_problem(info, relative, False, MAX_DOCUMENT_BYTES)
    if (
        problem is None
        and (base := (info.context or {}).get("base_dir"))
        and not (Path(base) / relative).stat().st_size
    ):
        return f"empty: {relative} holds no code to compare with"
    return problem


def gating_problems(criteria: Sequence[CriterionBase]) -> list[Problem]:
    """Informational (weight 0) criteria neither score nor gate: with only those, any run would pass (a dataset
    row's weights are checked too: ``weight: ${row.w}``)."""
    if any(criterion.gating for criterion in criteria):
        return []
    return [
        ("success_criteria", "every criterion has weight 0: nothing decides the task's success; give one a weight > 0")
    ]


class Task(RejectsMovedLimits):
    task_id: SafeId
    description: str  # may be empty, as coder_eval takes it (the guide: required)
    initial_prompt: str | None = None
    initial_prompt_file: str | None = None
    tags: list[Tag] = Field(default_factory=list)
    skip: bool = False
    agent: AgentConfig = Field(default_factory=AgentConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    run_limits: RunLimits = Field(default_factory=RunLimits)
    success_criteria: list[Criterion] = Field(min_length=1)
    reference: Reference | None = None
    pre_run: list[HookCommand] = Field(default_factory=list)
    post_run: list[HookCommand] = Field(default_factory=list)
    dataset: Dataset | None = None
    simulation: Simulation | None = None
    # coder_eval's: recorded beside the tool calls the agent made (task.json and run.json rows), never gating.
    expected_commands: int | None = Field(default=None, ge=1)
    # coder_eval's grading-side settings: api_route.model is the model of each llm_judge that names none.
    checker_context: CheckerContext = None

    @model_validator(mode="after")
    def _combination_rules(self, info: ValidationInfo) -> Task:
        """Every rule between fields, each broken one reported (one error per problem, not one per attempt)."""
        if is_partial(info):
            return self
        self._apply_checker_context()
        self.agent = self.agent.with_claude_code_defaults()
        problems = [
            *self._gating_problems(),
            *self._prompt_problems(),
            *self._agentless_problems(),
            *self._reference_problems(),
            *self._suite_threshold_problems(),
            *self._gate_threshold_problems(),
            *self._missing_files(info),
        ]
        if len(problems) == 1:
            raise rule_error(*problems[0])
        if problems:
            raise rule_errors(type(self).__name__, problems)
        return self

    def _apply_checker_context(self) -> None:
        """coder_eval's judge-model fallback: an llm_judge that names no model gets ``api_route.model``."""
        model = judge_model(self.checker_context)
        if model is None:
            return
        criteria = self.success_criteria
        unset = [i for i, c in enumerate(criteria) if c.type == "llm_judge" and "model" not in c.model_fields_set]
        if unset and self.dataset is not None:
            raise rule_error(
                "checker_context.api_route.model",
                "not supported on a dataset task: a row's criteria are read without it; "
                f"set model on the llm_judge itself (success_criteria.{unset[0]})",
            )
        for index in unset:
            criteria[index] = criteria[index].model_copy(update={"model": model})  # set: task.json names it

    def _gating_problems(self) -> list[Problem]:
        return gating_problems(self.success_criteria)

    def _prompt_problems(self) -> list[Problem]:
        """A prompt opens the agent's conversation, unless the simulated user opens it (or no agent reads one)."""
        if self.initial_prompt is not None and self.initial_prompt_file is not None:
            return [("initial_prompt_file", "set initial_prompt or initial_prompt_file, not both")]
        kind = self.agent.resolved_type
        if kind in ("none", "replay") or self.simulated or self.initial_prompt is not None:
            return []
        if self.initial_prompt_file is None:
            why = (
                f"required for agent type {kind} (or initial_prompt_file, or an enabled simulation to open the dialog)"
            )
            return [("initial_prompt", why)]
        return []

    def _agentless_problems(self) -> list[Problem]:
        if self.agent.resolved_type != "none":
            return []
        problems = [
            (name, "a type: none task has no agent to read a prompt")
            for name in ("initial_prompt", "initial_prompt_file")
            if getattr(self, name) is not None
        ]
        if self.simulated:
            problems.append(("simulation.enabled", "a type: none task cannot run a simulated dialog"))
        problems += [
            (
                f"success_criteria.{index}.type",
                f"{c.type} inspects the agent trajectory; not allowed with agent type none",
            )
            for index, c in enumerate(self.success_criteria)
            if c.needs_agent
        ]
        return problems

    def _reference_problems(self) -> list[Problem]:
        """A criterion reading the reference needs one; one reading its folder ($REFERENCE_DIR) needs a folder."""
        directory = self.reference is not None and self.reference.directory is not None
        problems: list[Problem] = []
        for index, criterion in enumerate(self.success_criteria):
            if criterion.type == "reference_comparison" and self.reference is None:
                problems.append((f"success_criteria.{index}", "reference_comparison requires a reference block"))
            if criterion.reads_reference_dir() and not directory:
                why = f"reads the reference folder (${REFERENCE_DIR}, reference_file): needs reference: {{directory}}"
                problems.append((f"success_criteria.{index}", why))
            if criterion.type == "reference_comparison" and directory and not criterion.reads_reference_dir():
                problems.append(
                    (
                        f"success_criteria.{index}.reference_file",
                        "required: which file of the reference folder to compare",
                    )
                )
        return problems

    def _suite_threshold_problems(self) -> list[Problem]:
        if self.dataset is not None:
            return []
        return [
            (f"success_criteria.{index}.suite_thresholds", "gate a dataset's rows: this task has no dataset")
            for index, criterion in enumerate(self.success_criteria)
            if criterion.suite_thresholds
        ]

    def _gate_threshold_problems(self) -> list[Problem]:
        if self.armed and self.run_limits.stop_early_gate_threshold <= 0.0:
            field = "run_limits.stop_early_gate_threshold"
            return [(field, "must be > 0.0 on a task with armed (stop_early) criteria")]
        return []

    def _missing_files(self, info: ValidationInfo) -> list[Problem]:
        reference, settings = self.reference, self.agent.claude_settings  # a mapping, or a settings file
        checks: list[tuple[str, str | None, bool, int]] = [
            ("initial_prompt_file", self.initial_prompt_file, False, MAX_DOCUMENT_BYTES),
            ("reference.file", reference.file if reference else None, False, MAX_DOCUMENT_BYTES),
            ("reference.directory", reference.directory if reference else None, True, 0),
            ("agent.trajectory", self._one_trajectory_file(), False, MAX_DOCUMENT_BYTES),
            ("agent.system_prompt_file", self.agent.system_prompt_file, False, MAX_DOCUMENT_BYTES),
            ("agent.claude_settings", settings if isinstance(settings, str) else None, False, MAX_DOCUMENT_BYTES),
        ]
        for index, source in enumerate(self.sandbox.template_sources):
            if isinstance(source, TemplateDirSource):
                checks.append((f"sandbox.template_sources.{index}.path", source.path, True, 0))
        for index, path in enumerate(self.dataset.paths or [] if self.dataset else []):
            checks.append((f"dataset.paths.{index}", path, False, MAX_DATASET_BYTES))
        found = [
            (field, p)
            for field, relative, folder, limit in checks
            if (p := _file_problem(info, relative, folder, limit))
        ]
        return found + [
            (field, p) for field, relative in self._compared_reference_files() if (p := _code_problem(info, relative))
        ]

    def _one_trajectory_file(self) -> str | None:
        """The replayed file, when one file serves every row; one named by the row is checked per row (resolution)."""
        named = self.agent.trajectory
        return None if named is None or "${row." in named else named

    def _compared_reference_files(self) -> list[tuple[str, str]]:
        """Each reference_comparison's file of the reference folder, task-relative: known at load, a missing or
        empty one is the task's mistake, not the agent's (coder_eval ends such an evaluation as an ERROR)."""
        folder = self.reference.directory if self.reference else None
        return [
            (f"success_criteria.{index}.reference_file", posixpath.normpath(f"{folder}/{file}"))  # (sub/.. walked)
            for index, criterion in enumerate(self.success_criteria)
            if folder
            and criterion.type == "reference_comparison"
            and (file := getattr(criterion, "reference_file", None))
        ]

    @property
    def armed(self) -> bool:
        """True when the early-stop watcher runs: a stop_early block and no kill switch."""
        if self.run_limits.stop_early is False:
            return False
        return any(getattr(c, "stop_early", None) is not None for c in self.success_criteria)

    @property
    def simulated(self) -> bool:
        """True when a simulated user holds a dialog with the agent (an enabled simulation block)."""
        return self.simulation is not None and self.simulation.enabled

    @property
    def replicates(self) -> int:
        if self.simulation is not None and self.simulation.enabled:
            return self.simulation.n_trials
        return 1


def _rebuild_with_registered_criteria() -> None:
    """A criterion type registered after import (a plugin, a test) becomes valid in task files."""
    field = Task.model_fields["success_criteria"]
    field.annotation = list[criterion_union()]  # type: ignore[misc, assignment]  # a union built at run time
    Task.model_rebuild(force=True)


on_change(_rebuild_with_registered_criteria)
