"""Fields and rules every criterion shares."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from ..models.base import StrictModel, rule_error

Scoring = Literal["binary", "fractional", "continuous"]
LIVE_OBSERVABLE_TYPES = ("skill_triggered", "command_executed")
AGGREGATE_METRICS = ("accuracy", "macro_f1", "weighted_f1", "micro_f1")
PER_LABEL_METRIC = re.compile(r"^(precision|recall|f1)\.(.+)$")


class StopEarly(StrictModel):
    """Presence arms the criterion for early stop; the keys are its two knobs."""

    on_pass: Literal["stop", "continue"] = "continue"
    decide_within: int | None = Field(default=None, ge=1)


class CriterionBase(StrictModel):
    """Common fields: a criterion is informational (never gating) at weight 0."""

    scoring: ClassVar[Scoring]
    # Criteria reading the agent trajectory cannot run under `agent: {type: none}`.
    needs_agent: ClassVar[bool] = False

    description: str = Field(min_length=1)
    weight: float = Field(default=1.0, ge=0)
    pass_threshold: float = Field(default=0.9, ge=0.0, le=1.0)

    @model_validator(mode="before")
    @classmethod
    def _placement_rules(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if "stop_early" in data and "stop_early" not in cls.model_fields:
                raise rule_error(
                    "stop_early",
                    "only skill_triggered and command_executed (live-observable criteria) can be armed",
                )
            if "suite_thresholds" in data and "suite_thresholds" not in cls.model_fields:
                raise rule_error(
                    "suite_thresholds",
                    "only classification criteria (classification_match, skill_triggered) have suite metrics",
                )
        return data

    @property
    def gating(self) -> bool:
        return self.weight > 0


class LiveObservable(CriterionBase):
    """A criterion the early-stop watcher can decide while the agent runs."""

    needs_agent: ClassVar[bool] = True
    stop_early: StopEarly | None = None

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
