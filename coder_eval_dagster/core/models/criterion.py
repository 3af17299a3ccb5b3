"""What every criterion shares in the format: its common fields and rules, and the registry of criterion models.

Each criterion type is one module under ``criteria/`` holding its model and
its check; ``criteria.registry.checks`` registers both, the model here. The
format reads the registered models (``success_criteria``'s discriminated
union is rebuilt when a type is registered later: a plugin, a test), and
imports nothing above itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union, get_args

from pydantic import BeforeValidator, Field, model_validator

from .base import StrictModel, rule_error, rule_errors

if TYPE_CHECKING:
    from .results import ToolCallRecord

AGGREGATE_METRICS = ("accuracy", "macro_f1", "weighted_f1", "micro_f1")
PER_LABEL_METRIC = re.compile(r"^(precision|recall|f1)\.(.+)$")
# Every criterion's suite metrics over a dataset's rows: its scores' statistics, and the share of rows it scored.
SCORE_METRICS = ("count", "mean", "median", "std", "min", "max", "completion_rate")
REFERENCE_DIR = "REFERENCE_DIR"  # the reference folder's variable in commands and prefix in judge files
TASK_DIR = "TASK_DIR"  # the task file's folder's variable in run_command criteria
UNBOUNDED_METRICS = ("count", "std")  # every other metric is a share or a score, within [0, 1]
# coder_eval 0.12.16's Optional list and mapping fields of its criteria, by type, beside every criterion's
# suite_thresholds: a null there is the field not given.
RELEASE_NULLABLE: dict[str, tuple[str, ...]] = {"file_contains": ("excludes",), "cli_called": ("positional", "flags")}


def without_nulls(data: Any, names: tuple[str, ...]) -> Any:
    """A block's raw mapping without the ``name: null`` of ``names``: coder_eval 0.12.16 types those fields Optional
    and reads a null there as unset (its dumped configs write them so), and so they read as not given here."""
    if not isinstance(data, dict):
        return data
    return {key: value for key, value in data.items() if value is not None or key not in names}


def nulls_unset(*names: str) -> Any:
    """A model's before-validator applying :func:`without_nulls` to ``names`` (its fields coder_eval types
    Optional where ours hold an empty default)."""

    def unset(cls: type, data: Any) -> Any:
        return without_nulls(data, names)

    return model_validator(mode="before")(unset)


class StopEarly(StrictModel):
    """Presence arms the criterion for early stop; the keys are its two knobs."""

    on_pass: Literal["stop", "continue"] = "continue"
    decide_within: int | None = Field(default=None, ge=1)


class CriterionBase(StrictModel):
    """Common fields: a criterion is informational (never gating) at weight 0."""

    # Criteria reading the agent trajectory cannot run under `agent: {type: none}`.
    needs_agent: ClassVar[bool] = False
    # Criteria that call a model (the judges) go through the run's API route.
    calls_model: ClassVar[bool] = False

    type: str  # each criterion model narrows it to its own Literal name
    description: str  # may be empty, as coder_eval takes it (the guide: required)
    weight: float = Field(default=1.0, ge=0)
    pass_threshold: float = Field(default=0.9, ge=0.0, le=1.0)
    suite_thresholds: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _release_nulls(cls, data: Any) -> Any:
        """A null where coder_eval types a field Optional (``suite_thresholds: null``, its default) is the field not
        given."""
        kind = data.get("type") if isinstance(data, dict) else None
        nullable = RELEASE_NULLABLE.get(kind, ()) if isinstance(kind, str) else ()
        return without_nulls(data, ("suite_thresholds", *nullable))

    @model_validator(mode="before")
    @classmethod
    def _placement_rules(cls, data: Any) -> Any:
        """``stop_early`` arms a live-observable criterion only; ``stop_early: null`` (the guide's default of every
        criterion) arms nothing, and is dropped."""
        if not isinstance(data, dict) or "stop_early" not in data or "stop_early" in cls.model_fields:
            return data
        if data["stop_early"] is None:
            return {key: value for key, value in data.items() if key != "stop_early"}
        raise rule_error("stop_early", f"only {_names(LiveObservable)} (live-observable criteria) can be armed")

    @model_validator(mode="after")
    def _thresholds_are_metrics(self) -> CriterionBase:
        if self.suite_thresholds and self.weight == 0:
            raise rule_error("suite_thresholds", "a weight: 0 (informational) criterion cannot gate the suite")
        problems: list[tuple[str, str]] = []  # every threshold's, at once
        for metric, minimum in self.suite_thresholds.items():
            unknown = None if metric in SCORE_METRICS else self.metric_problem(metric)
            if unknown is not None:
                problems.append((f"suite_thresholds.{metric}", unknown))
                continue
            unbounded = metric in UNBOUNDED_METRICS
            if minimum < 0 or (minimum > 1 and not unbounded):
                problems.append(
                    (
                        f"suite_thresholds.{metric}",
                        f"the {metric} minimum must be {'>= 0' if unbounded else 'within [0, 1]'}",
                    )
                )
        if problems:
            raise rule_errors("suite_thresholds", problems)
        return self

    def metric_problem(self, metric: str) -> str | None:
        """Why this criterion's suite rollup does not report ``metric`` (None: it does); a classification adds its
        own metrics."""
        return f"unknown metric; use one of {', '.join(SCORE_METRICS)}"

    def reads_reference_dir(self) -> bool:
        """True when the criterion reads the task's reference folder (``$REFERENCE_DIR``)."""
        return False

    def load_warnings(self) -> list[tuple[str, str]]:
        """(field, why) for what is valid but will not act as written: said at load, never refused."""
        return []

    def reads_task_dir(self) -> bool:
        """True when the criterion's command reads the task file's folder (``$TASK_DIR``): it is staged then."""
        return False

    @property
    def gating(self) -> bool:
        return self.weight > 0


class LiveObservable(CriterionBase):
    """A criterion the early-stop watcher can decide while the agent runs (see core/early_stop.py)."""

    needs_agent: ClassVar[bool] = True
    stop_early: StopEarly | None = None

    def can_live_pass(self) -> bool:
        raise NotImplementedError

    def can_live_fail(self) -> bool:
        raise NotImplementedError

    def live_hit(self, call: ToolCallRecord) -> bool:
        """True when this completed tool call counts toward the criterion."""
        raise NotImplementedError

    def live_verdict(self, hits: int) -> Literal["pass", "fail"] | None:
        """The verdict once ``hits`` calls have counted (None: undecided)."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _informational_cannot_arm(self) -> LiveObservable:
        if self.weight == 0 and self.stop_early is not None:
            raise rule_error("stop_early", "a weight: 0 (informational) criterion cannot be armed")
        return self


class Classification(CriterionBase):
    """A criterion that yields a label, so a dataset rollup has classification metrics too."""

    def metric_labels(self) -> list[str] | None:
        """Labels valid in per-label metric names (None: any label)."""
        return None

    def label_space(self) -> list[str]:
        """The labels every suite rollup reports, seen or not."""
        raise NotImplementedError

    def expected(self) -> str:
        """The ground-truth label of this row."""
        raise NotImplementedError

    def metric_problem(self, metric: str) -> str | None:
        if metric in AGGREGATE_METRICS:
            return None
        match = PER_LABEL_METRIC.match(metric)
        if match is None:
            return (
                f"unknown metric; use one of {', '.join((*SCORE_METRICS, *AGGREGATE_METRICS))} or "
                "precision.<label>, recall.<label>, f1.<label>"
            )
        labels = self.metric_labels()
        if labels is not None and match.group(2) not in labels:
            return f"unknown label {match.group(2)!r}; labels are {', '.join(labels)}"
        return None


def names_reference_dir(text: str) -> bool:
    """``$REFERENCE_DIR`` or ``${REFERENCE_DIR}`` in a command or a path."""
    return _names_variable(text, REFERENCE_DIR)


def _names_variable(text: str, name: str) -> bool:
    return re.search(rf"\$(\{{{name}\}}|{name}\b)", text) is not None


def _names(base: type) -> str:
    return ", ".join(types_of(base))


# ----------------------------------------------------------------------------- the registered models

# type name -> model, in registration order (core/criteria/__init__.py says what that order is)
MODELS: dict[str, type[CriterionBase]] = {}
_on_change: list[Callable[[], None]] = []


def type_name(model: type[CriterionBase]) -> str:
    """The ``type`` a criterion model declares (its Literal's one value)."""
    (name,) = get_args(model.model_fields["type"].annotation)  # a Literal of one name by contract
    if not isinstance(name, str):
        raise TypeError(f"{model.__name__}.type must be a Literal of one name, not {name!r}")
    return name


def register_model(model: type[CriterionBase]) -> str:
    """Add (or replace) a criterion model; schemas built from the registry rebuild. Its type name."""
    name = type_name(model)
    MODELS[name] = model
    _changed()
    return name


def unregister_model(name: str) -> None:
    MODELS.pop(name, None)
    _changed()


def on_change(listener: Callable[[], None]) -> None:
    """Call ``listener`` whenever the set of types changes (schemas built from it rebuild)."""
    _on_change.append(listener)


def _changed() -> None:
    for listener in _on_change:
        listener()


def types_of(base: type) -> list[str]:
    """The registered type names whose model derives from ``base`` (for messages)."""
    return [name for name, model in MODELS.items() if issubclass(model, base)]


# coder_eval's legacy criterion types, still accepted: the fields each becomes (its NORMALIZED_CRITERION_ALIASES).
# The overlay wins over what the criterion sets: `command_not_executed` with `min_count: 2` still means "not run".
CRITERION_ALIASES: dict[str, dict[str, Any]] = {
    "command_not_executed": {"type": "command_executed", "min_count": 0, "max_count": 0},
}


def _unalias(data: Any) -> Any:
    """A criterion block with a legacy ``type`` rewritten to the criterion it stands for."""
    kind = data.get("type") if isinstance(data, dict) else None
    if isinstance(kind, str) and kind in CRITERION_ALIASES:  # (a malformed type, a list say, is the union's to refuse)
        return {**data, **CRITERION_ALIASES[kind]}
    return data


def criterion_union() -> Any:
    """The discriminated union of every registered criterion model (what ``success_criteria`` holds); a legacy
    alias (:data:`CRITERION_ALIASES`) is rewritten before the union picks the model."""
    union: Any = Annotated[Union[tuple(MODELS.values())], Field(discriminator="type")]  # noqa: UP007
    return Annotated[union, BeforeValidator(_unalias)]
