"""The run as a value: what a run selects, defined once.

The CLI builds a ``RunSpec`` from its arguments, the Dagster resource holds
one (a run launched from the UI, a schedule or the sensor shows it in the
Launchpad), and ``run_plan.json`` serializes it. Resolution reads nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_JUDGE_CONCURRENCY = 4


class RunSpec(BaseModel):
    """Which row-tasks x variants a run covers."""

    model_config = ConfigDict(extra="forbid")

    task_paths: list[str] = Field(default_factory=list, description="task files or folders (recursive *.yaml)")
    experiment: str | None = Field(default=None, description="experiment file (variants, defaults, repeats)")
    overrides: list[str] = Field(default_factory=list, description="-D key.path=value overrides, in order")
    agent_type: str | None = Field(default=None, description="agent type for every task (--type)")
    model: str | None = Field(default=None, description="agent.model for every task (--model)")
    sample: int | None = Field(default=None, ge=1, description="fixed-seed rows per stratum (--sample)")
    tags: list[str] = Field(default_factory=list, description="only tasks with any of these tags")
    task_patterns: list[str] = Field(default_factory=list, description="only row-tasks whose id matches a glob")
    limit: int | None = Field(default=None, ge=1, description="the first N row-tasks after filtering")
    include_skipped: bool = Field(default=False, description="also run tasks marked skip: true")

    @property
    def selects_anything(self) -> bool:
        return bool(self.task_paths) or self.experiment is not None


@dataclass(frozen=True)
class JudgeSettings:
    """How a run routes and bounds its model calls (judges included); travels to the scoring stage."""

    backend: str | None = None  # -b/--backend; None: API_BACKEND, else direct
    judge_concurrency: int = DEFAULT_JUDGE_CONCURRENCY
    only_criteria: list[str] | None = None  # rescore --only-criteria
