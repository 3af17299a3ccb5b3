"""The run as a value: what a run selects (``RunSpec``) and how it runs (``RunOptions``), each declared once.

The CLI's options are generated from these models (``cli_options.py``: a
field's flags are its ``cli`` extra, its help its description), the Dagster
resource's config too (``defs/resources.py``: the Launchpad shows and edits
them), and ``run_plan.json`` serializes the spec. Resolution reads nothing
else. A new option is one field here, and its use.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .agents.registry import AGENT_TYPES
from .models.experiment import MAX_REPEATS
from .routing import BACKENDS, checked_backend

DEFAULT_JUDGE_CONCURRENCY = 4
ESTIMATE_FORMATS = ("table", "json")
EXPERIMENTS_DIR = Path("experiments")  # where -e NAME is looked for, and the base layer (default.yaml), in the cwd


def experiment_candidates(name: str) -> list[Path]:
    """Where ``-e NAME`` is looked for under the current folder when no file is at NAME, in coder_eval's order
    (``_resolve_experiment_path``): ``experiments/NAME.yaml``, ``experiments/NAME.yml``, then
    ``experiments/NAME`` as given (``-e plugin-comparison.yaml``)."""
    return [EXPERIMENTS_DIR / f"{name}.yaml", EXPERIMENTS_DIR / f"{name}.yml", EXPERIMENTS_DIR / name]


def available_experiments() -> list[str]:
    """The names ``-e`` finds in ``experiments/`` of the current folder; not ``default``, the base layer of every
    run (as coder_eval leaves it out of its list)."""
    found = [*EXPERIMENTS_DIR.glob("*.yaml"), *EXPERIMENTS_DIR.glob("*.yml")]
    return sorted({path.stem for path in found if path.is_file()} - {"default"})


def cli(
    *flags: str,
    metavar: str | None = None,
    repeatable: bool = False,
    comma: bool = False,
    choices: tuple[str, ...] | None = None,
    refused: dict[str, str] | None = None,
    beyond: str | None = None,
) -> dict[str, Any]:
    """A field's command-line spelling: its flags (a name without dashes: positional), a metavar, whether a list
    is given by repeating the flag or as one comma-separated value, the values a string may take, values other
    tools take that are refused here (each with its reason and our equivalent), and why a number cannot go
    beyond the field's upper bound."""
    spelling = {"flags": list(flags), "metavar": metavar, "repeatable": repeatable, "comma": comma}
    extra = {"refused": dict(refused) if refused else None, "beyond": beyond}
    return {"cli": {**spelling, "choices": list(choices) if choices else None, **extra}}


class RunSpec(BaseModel):
    """Which row-tasks x variants a run covers."""

    model_config = ConfigDict(extra="forbid")

    task_paths: list[str] = Field(
        default_factory=list,
        description="task files or folders (recursive *.yaml, *.yml)",
        json_schema_extra=cli("paths", metavar="PATH"),
    )
    experiment: str | None = Field(
        default=None,
        description="experiment file (variants, defaults, repeats), or NAME for experiments/NAME.yaml",
        json_schema_extra=cli("-e", "--experiment", metavar="FILE|NAME"),
    )
    overrides: list[str] = Field(
        default_factory=list,
        description="override a task field (YAML value); repeatable, merged per key",
        json_schema_extra=cli("-D", "--set", metavar="KEY.PATH=VALUE", repeatable=True),
    )
    agent_type: str | None = Field(
        default=None,
        description=f"agent type for every task (agent.type: {', '.join(AGENT_TYPES.names)})",
        json_schema_extra=cli("--type", "-T", metavar="TYPE"),
    )
    model: str | None = Field(
        default=None,
        description="agent.model for every task (shorthand for -D agent.model=MODEL)",
        json_schema_extra=cli("--model", "-m", metavar="MODEL"),
    )
    prices: str | None = Field(
        default=None,
        description="a YAML file of model prices (USD per million tokens) over the built-in ones; "
        "default: the experiment's prices file",
        json_schema_extra=cli("--prices", metavar="FILE"),
    )
    max_usd: float | None = Field(
        default=None,
        gt=0,
        description="a spending limit for the whole run (agent, judges, simulated user): once reached no new "
        "evaluation starts; default: the experiment's budget.max_usd",
        json_schema_extra=cli("--max-usd", metavar="USD"),
    )
    sample: int | None = Field(
        default=None,
        ge=1,
        description="fixed-seed sample of N rows per stratum",
        json_schema_extra=cli("--sample", metavar="N"),
    )
    sample_per_stratum: int | None = Field(
        default=None,
        ge=1,
        description="dataset.sample_per_stratum for every dataset (its sample_seed applies; --sample wins)",
        json_schema_extra=cli("--sample-per-stratum", metavar="N"),
    )
    split: str | None = Field(
        default=None,
        description="only the dataset rows whose dataset.split_field is NAME (before sampling)",
        json_schema_extra=cli("--split", metavar="NAME"),
    )
    repeats: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPEATS,
        description="replicates per row-task and variant (overrides the experiment's repeats)",
        json_schema_extra=cli(
            "--repeats",
            metavar="N",
            beyond="replicate folders are two digits, 00 to 98; for more, run again: the tables and "
            "`coder-eval history` read across runs",
        ),
    )
    driver: str | None = Field(
        default=None,
        description="sandbox.driver for every task (over the task and the variant: tempdir, docker)",
        json_schema_extra=cli("--driver", metavar="DRIVER"),
    )
    tags: list[str] = Field(
        default_factory=list,
        description="only tasks with any of these tags",
        json_schema_extra=cli("--tags", "-t", metavar="A,B", comma=True),
    )
    exclude_tags: list[str] = Field(
        default_factory=list,
        description="leave out tasks with any of these tags",
        json_schema_extra=cli("--exclude-tags", metavar="A,B", comma=True),
    )
    task_patterns: list[str] = Field(
        default_factory=list,
        description="only row-tasks whose id matches (e.g. 'arithmetic_dataset/add-*'); repeatable",
        json_schema_extra=cli("--task", metavar="GLOB", repeatable=True),
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        description="only the first N row-tasks after filtering",
        json_schema_extra=cli("--limit", metavar="N"),
    )
    include_skipped: bool = Field(
        default=False, description="also run tasks marked skip: true", json_schema_extra=cli("--include-skipped")
    )

    @field_validator("experiment")
    @classmethod
    def _experiment_by_name(cls, value: str | None) -> str | None:
        """``-e NAME``: when NAME is no path, the first of ``experiment_candidates`` that is a file."""
        if value is None or Path(value).exists():
            return value
        found = (candidate for candidate in experiment_candidates(value) if candidate.is_file())
        return str(next(found, value))

    @field_validator("driver")
    @classmethod
    def _registered_driver(cls, value: str | None) -> str | None:
        from .models.sandbox import SANDBOX_DRIVERS

        return None if value is None else SANDBOX_DRIVERS.check(value)

    @property
    def selects_anything(self) -> bool:
        return bool(self.task_paths) or self.experiment is not None


class RunOptions(BaseModel):
    """How a run runs: its width, where its results go, its model route and judge limit."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int = Field(
        default=0,
        ge=0,
        description="evaluations at once (default, or 0: the CPU count); -j/--max-parallel: coder_eval's spelling",
        json_schema_extra=cli("--concurrency", "-j", "--max-parallel", metavar="N"),
    )
    runs_dir: str = Field(
        default="runs",
        description="where run folders go (default runs/)",
        json_schema_extra=cli("--runs-dir", metavar="DIR"),
    )
    backend: str | None = Field(  # a str, not a Literal: Dagster's config has no Literal
        default=None,
        description="model API backend for the agent, the judges and the simulated user "
        "(default: $API_BACKEND, else direct)",
        json_schema_extra=cli(
            "-b",
            "--backend",
            choices=BACKENDS,
            refused={
                "litellm": "no litellm backend here (coder_eval's LITELLM_BASE_URL proxy); for a proxy that "
                "serves Anthropic's Messages API use -b direct with ANTHROPIC_BASE_URL=<its URL>"
            },
        ),
    )
    judge_concurrency: int = Field(
        default=DEFAULT_JUDGE_CONCURRENCY,
        ge=1,
        description=f"judge calls at once across the run (default {DEFAULT_JUDGE_CONCURRENCY})",
        json_schema_extra=cli("--judge-concurrency", metavar="N"),
    )
    only_criteria: list[str] | None = Field(
        default=None,
        description="rescore: re-run only criteria of these types; the others keep their stored results",
        json_schema_extra=cli("--only-criteria", metavar="TYPE[,TYPE]", comma=True),
    )
    estimate: bool = Field(
        default=False,
        description="run nothing: print the run's forecast (evaluations, tokens, USD, wall time per variant) from "
        "earlier runs' tables, and the limits of row-tasks without history (a launched run ignores it)",
        json_schema_extra=cli("--estimate"),
    )
    estimate_format: str = Field(  # a str, not a Literal: Dagster's config has no Literal
        default="table",
        description="the format of --estimate's forecast: table (default) or json",
        json_schema_extra=cli("--format", choices=ESTIMATE_FORMATS),
    )
    no_reuse: bool = Field(
        default=False,
        description="rescore, --retry-errors: call every judge again, even one shown exactly what a stored "
        "verdict saw (by default that verdict is reused, marked reused, and costs nothing)",
        json_schema_extra=cli("--no-reuse"),
    )
    docker_image: str | None = Field(
        default=None,
        description="the docker driver's image for tasks that name none (default: $CODER_EVAL_DOCKER_IMAGE, "
        "else the built-in tag)",
    )

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, name: str | None) -> str | None:
        return None if name is None else checked_backend(name)

    @field_validator("only_criteria")
    @classmethod
    def _registered_types(cls, names: list[str] | None) -> list[str] | None:
        from .models.criterion import MODELS

        unknown = [name for name in names or [] if name not in MODELS]
        if unknown or names == []:
            raise ValueError(
                f"unknown criterion type(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(sorted(MODELS))}"
            )
        return names

    @field_validator("estimate_format")
    @classmethod
    def _known_format(cls, name: str) -> str:
        if name not in ESTIMATE_FORMATS:
            raise ValueError(f"unknown format {name!r}; known: {', '.join(ESTIMATE_FORMATS)}")
        return name

    @property
    def workers(self) -> int:
        """Evaluations at once: the concurrency, or the CPU count."""
        return self.concurrency if self.concurrency > 0 else os.cpu_count() or 1
