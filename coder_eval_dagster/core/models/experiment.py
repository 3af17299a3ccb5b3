"""Experiment files: one task set under several variants (A/B)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError, field_validator, model_validator

from .agent import AgentConfig
from .base import SafeId, StrictModel, check_regex, rule_error
from .checker import CheckerContext
from .commands import HookCommand
from .criterion import nulls_unset
from .limits import RunLimits
from .sandbox import SANDBOX_DRIVERS, SandboxConfig, TemplateSource, check_repo_first
from .simulation import Simulation

MAX_REPEATS = 99  # replicate folders are two digits
Repeats = Annotated[int, Field(ge=1, le=MAX_REPEATS)]


def _known_simulation_keys(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """A partial simulation block (merged onto the task's): known keys, each of its field's type, so that a bad
    value is the experiment file's error, not the task's it is merged into."""
    for key, item in (value or {}).items():
        field = Simulation.model_fields.get(key)
        if field is None:
            raise rule_error(key, "unknown simulation field")
        try:
            bounded: Any = Annotated[field.annotation, field]  # its type and its bounds (a runtime-built form)
            TypeAdapter(bounded).validate_python(item)
        except ValidationError as exc:
            raise rule_error(key, exc.errors()[0]["msg"]) from None
    return value


def _registered_driver(value: str | None) -> str | None:
    return None if value is None else SANDBOX_DRIVERS.check(value)


class PrefixMutation(StrictModel):
    type: Literal["prefix"]
    content: str
    separator: str = "\n\n"

    def apply(self, prompt: str) -> str:
        return self.content + self.separator + prompt


class SuffixMutation(StrictModel):
    type: Literal["suffix"]
    content: str
    separator: str = "\n\n"

    def apply(self, prompt: str) -> str:
        return prompt + self.separator + self.content


class ReplaceMutation(StrictModel):
    type: Literal["replace"]
    pattern: str = Field(min_length=1)
    replacement: str = ""
    regex: bool = False

    @model_validator(mode="after")
    def _compiles(self) -> ReplaceMutation:
        if self.regex:
            try:
                check_regex(self.pattern)
            except ValueError as exc:
                raise rule_error("pattern", str(exc)) from None
        return self

    def apply(self, prompt: str) -> str:
        if self.regex:
            return re.sub(self.pattern, self.replacement, prompt)
        return prompt.replace(self.pattern, self.replacement)


class TemplateMutation(StrictModel):
    type: Literal["template"]
    variables: dict[str, str] = Field(min_length=1)

    def apply(self, prompt: str) -> str:
        for name, value in self.variables.items():
            prompt = prompt.replace("{" + name + "}", value)
        return prompt


REPHRASE_REFUSAL = (
    "rephrase is not supported: a model rewriting the prompt makes the variant's prompt differ from run to run; "
    "write the rephrased prompt as the variant's initial_prompt"
)
PromptMutation = Annotated[
    PrefixMutation | SuffixMutation | ReplaceMutation | TemplateMutation, Field(discriminator="type")
]


class Overlay(StrictModel):
    """What an experiment may lay over a task: merged key by key, the simulation shallowly."""

    agent: AgentConfig | None = None
    sandbox: SandboxConfig | None = None
    run_limits: RunLimits | None = None
    simulation: dict[str, Any] | None = None
    repeats: Repeats | None = None
    driver: str | None = None
    prompt_mutations: list[PromptMutation] = Field(default_factory=list)
    # after the task's own: the defaults' before a variant's
    template_sources: list[TemplateSource] = Field(default_factory=list)

    _simulation = field_validator("simulation")(_known_simulation_keys)
    _driver = field_validator("driver")(_registered_driver)
    _nulls = nulls_unset("prompt_mutations", "template_sources")  # coder_eval's Optional fields

    @model_validator(mode="after")
    def _repo_first(self) -> Overlay:
        """A repo after another source of this list can never be first: said by ``validate`` of the file alone."""
        check_repo_first(self.template_sources)
        return self

    @model_validator(mode="before")
    @classmethod
    def _no_rephrase(cls, data: Any) -> Any:
        """coder_eval's ``rephrase`` mutation, refused with its reason (not as a misspelt ``replace``)."""
        mutations = data.get("prompt_mutations") if isinstance(data, dict) else None
        for index, mutation in enumerate(mutations if isinstance(mutations, list) else []):
            if isinstance(mutation, dict) and mutation.get("type") == "rephrase":
                raise rule_error(f"prompt_mutations.{index}.type", REPHRASE_REFUSAL)
        return data


class ExperimentDefaults(Overlay):
    """Applied under every task: the task file overrides it; pre_run goes first, post_run last."""

    pre_run: list[HookCommand] = Field(default_factory=list)
    post_run: list[HookCommand] = Field(default_factory=list)
    checker_context: CheckerContext = None  # merged key by key under the task's (coder_eval's defaults layer)

    _hook_nulls = nulls_unset("pre_run", "post_run")  # coder_eval's Optional fields


class Variant(Overlay):
    """One arm of the experiment, merged over each task; its template sources come last.

    Its own prompt (``initial_prompt``, or ``initial_prompt_file`` relative to the
    experiment file) replaces the task's and skips every mutation.
    """

    variant_id: SafeId
    description: str | None = None
    checker_context: CheckerContext = None  # merged key by key over the task's
    initial_prompt: str | None = None
    initial_prompt_file: str | None = None

    @model_validator(mode="after")
    def _one_prompt_change(self) -> Variant:
        given = [name for name in ("initial_prompt", "initial_prompt_file") if getattr(self, name) is not None]
        if self.prompt_mutations:
            given.append("prompt_mutations")
        if len(given) > 1:
            raise rule_error(given[1], f"set one of initial_prompt, initial_prompt_file or prompt_mutations: {given}")
        return self


class Sequential(StrictModel):
    """A sequential A/B: rows run in seeded random batches; after each batch an anytime-valid confidence sequence
    for the paired success difference decides whether any new row need start (docs/analysts.md)."""

    alpha: float = Field(default=0.05, gt=0, lt=1)
    batch_rows: int = Field(default=20, ge=1)
    min_rows: int = Field(default=0, ge=0)
    max_rows: int | None = Field(default=None, ge=1)
    margin: float | None = Field(default=None, gt=0, lt=1)  # stop for equivalence when the sequence lies within it
    seed: int = 0  # the row order: the same rows and seed, the same batches


class Budget(StrictModel):
    """A spending limit for the whole run: once its spend reaches ``max_usd``, no new evaluation starts."""

    max_usd: float = Field(gt=0)


class Experiment(StrictModel):
    experiment_id: SafeId
    description: str | None = None
    tasks: list[str] = Field(default_factory=list)
    repeats: Repeats | None = None
    defaults: ExperimentDefaults = Field(default_factory=ExperimentDefaults)
    variants: list[Variant] = Field(min_length=1)
    prices: str | None = Field(default=None, min_length=1)  # a price file, relative to this file (--prices wins)
    sequential: Sequential | None = None
    budget: Budget | None = None  # --max-usd wins
    max_flaky_share: float | None = Field(default=None, ge=0, le=1)  # a suite gate over rows whose replicates disagree

    _nulls = nulls_unset("defaults")  # coder_eval's Optional field

    @model_validator(mode="after")
    def _unique_variants(self) -> Experiment:
        if self.repeats is not None and self.defaults.repeats is not None:
            raise rule_error("repeats", "set repeats once: here or in defaults")
        seen: set[str] = set()
        for index, variant in enumerate(self.variants):
            if variant.variant_id in seen:
                raise rule_error(f"variants.{index}.variant_id", f"duplicate variant_id {variant.variant_id!r}")
            seen.add(variant.variant_id)
        if self.sequential is not None and len(self.variants) < 2:
            raise rule_error("sequential", "a sequential A/B needs a baseline and at least one other variant")
        return self

    @property
    def default_repeats(self) -> int | None:
        """Replicates of each row-task under a variant that sets none (``repeats``, or ``defaults.repeats``)."""
        return self.repeats or self.defaults.repeats
