"""Fields and rules every criterion shares."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from ..models.base import StrictModel, rule_error

if TYPE_CHECKING:
    from ..results import ToolCallRecord

AGGREGATE_METRICS = ("accuracy", "macro_f1", "weighted_f1", "micro_f1")
PER_LABEL_METRIC = re.compile(r"^(precision|recall|f1)\.(.+)$")


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

    description: str = Field(min_length=1)
    weight: float = Field(default=1.0, ge=0)
    pass_threshold: float = Field(default=0.9, ge=0.0, le=1.0)

    @model_validator(mode="before")
    @classmethod
    def _placement_rules(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if "stop_early" in data and "stop_early" not in cls.model_fields:
                raise rule_error("stop_early", f"only {_names(LiveObservable)} (live-observable criteria) can be armed")
            if "suite_thresholds" in data and "suite_thresholds" not in cls.model_fields:
                raise rule_error(
                    "suite_thresholds", f"only classification criteria ({_names(Classification)}) have suite metrics"
                )
        return data

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
    """A criterion that yields a label, so a dataset rollup has suite metrics."""

    suite_thresholds: dict[str, float] = Field(default_factory=dict)

    def metric_labels(self) -> list[str] | None:
        """Labels valid in per-label metric names (None: any label)."""
        return None

    def label_space(self) -> list[str]:
        """The labels every suite rollup reports, seen or not."""
        raise NotImplementedError

    def expected(self) -> str:
        """The ground-truth label of this row."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _thresholds_are_metrics(self) -> Classification:
        if self.suite_thresholds and self.weight == 0:
            raise rule_error("suite_thresholds", "a weight: 0 (informational) criterion cannot gate the suite")
        labels = self.metric_labels()
        for metric, minimum in self.suite_thresholds.items():
            check_metric_name(metric, labels)
            if not 0.0 <= minimum <= 1.0:
                raise rule_error(f"suite_thresholds.{metric}", "a metric minimum must be within [0, 1]")
        return self


def _names(base: type) -> str:
    from .registry import types_of

    return ", ".join(types_of(base))


def check_metric_name(metric: str, labels: list[str] | None) -> None:
    if metric in AGGREGATE_METRICS:
        return
    match = PER_LABEL_METRIC.match(metric)
    if match is None:
        raise rule_error(
            f"suite_thresholds.{metric}",
            f"unknown metric; use one of {', '.join(AGGREGATE_METRICS)} or precision.<label>, "
            "recall.<label>, f1.<label>",
        )
    if labels is not None and match.group(2) not in labels:
        raise rule_error(
            f"suite_thresholds.{metric}", f"unknown label {match.group(2)!r}; labels are {', '.join(labels)}"
        )
