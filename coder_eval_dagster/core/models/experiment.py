"""Experiment files: one task set under several variants (A/B)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from .agent import AgentConfig
from .base import SafeId, StrictModel, rule_error
from .commands import HookCommand
from .limits import RunLimits
from .sandbox import SandboxConfig, TemplateSource
from .simulation import Simulation


def _known_simulation_keys(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """A partial simulation block: only known keys (it is merged onto the task's)."""
    for key in value or {}:
        if key not in Simulation.model_fields:
            raise ValueError(f"unknown simulation field {key!r}")
    return value


class Overlay(StrictModel):
    """What an experiment may lay over a task: merged key by key, the simulation shallowly."""

    agent: AgentConfig | None = None
    sandbox: SandboxConfig | None = None
    run_limits: RunLimits | None = None
    simulation: dict[str, Any] | None = None

    _simulation = field_validator("simulation")(_known_simulation_keys)


class ExperimentDefaults(Overlay):
    """Applied under every task: the task file overrides it; pre_run goes first, post_run last."""

    pre_run: list[HookCommand] = Field(default_factory=list)
    post_run: list[HookCommand] = Field(default_factory=list)


class Variant(Overlay):
    """One arm of the experiment, merged over each task; its template sources come last."""

    variant_id: SafeId
    description: str | None = None
    template_sources: list[TemplateSource] = Field(default_factory=list)


class Experiment(StrictModel):
    experiment_id: SafeId
    description: str | None = None
    tasks: list[str] = Field(default_factory=list)
    repeats: int = Field(default=1, ge=1)
    defaults: ExperimentDefaults = Field(default_factory=ExperimentDefaults)
    variants: list[Variant] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_variants(self) -> Experiment:
        seen: set[str] = set()
        for index, variant in enumerate(self.variants):
            if variant.variant_id in seen:
                raise rule_error(f"variants.{index}.variant_id", f"duplicate variant_id {variant.variant_id!r}")
            seen.add(variant.variant_id)
        return self
