"""`uipath_eval`: a UiPath coded agent's evaluation set, run by the real `uipath` CLI, must meet metric thresholds.

The CLI (the `uipath` package, 2.14) writes a ``UiPathEvalOutput``: per item,
one result per evaluator (``evaluationSetResults[].evaluationRunResults[]``),
and the dataset-level results of the classification aggregators
(``datasetEvaluatorResults``, keyed ``<evaluator>::<type>``). The metrics a
threshold can name (docs/task-format.md, ``uipath_eval``):

- ``<evaluator>``: the mean of that evaluator's per-item scores (line-by-line
  sub-results left out), named by its name or, as coder_eval names it, its id;
- ``*``: the mean of the evaluators' means (coder_eval's macro average);
- ``<evaluator>::<type>``: a dataset result's score, its key as the CLI writes it
  (a confusion matrix has no scalar score and gives none);
- ``<evaluator>::<type>.<group>.<rate>``: the rates a classification result
  reports besides its score: ``macro``, ``micro`` and ``perClass.<class>``
  groups, ``precision``, ``recall`` and ``fScore`` rates.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from ..files import CRITERION_READ_CAP
from ..models.base import did_you_mean
from ..models.criterion import CriterionBase
from .outcome import Outcome, meets
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext

EVAL_TIMEOUT_S = 1800
RESULTS_FILE = ".coder-eval-uipath-eval.json"
OUTPUT_TAIL_CHARS = 2000
MISSING_CLI = (
    "the `uipath` CLI is not installed in the sandbox venv: "
    "add `uipath` (e.g. `uipath>=2.14,<2.15`) to `sandbox.python.env_packages`"
)
RATES = ("precision", "recall", "fScore")


class UipathEval(CriterionBase):
    type: Literal["uipath_eval"]
    agent_name: str = Field(min_length=1)
    eval_set: str = Field(min_length=1)
    thresholds: dict[str, float] = Field(min_length=1)


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, extra="ignore")


class EvalResult(_Camel):
    score: float
    details: Any = None


class EvalRunResult(_Camel):
    evaluator_name: str
    evaluator_id: str | None = None
    result: EvalResult
    is_line_result: bool = False


class EvalItem(_Camel):
    evaluation_name: str
    evaluation_run_results: list[EvalRunResult]


class EvalOutput(_Camel):
    """The part of the CLI's ``UiPathEvalOutput`` the metrics come from."""

    evaluation_set_name: str
    evaluation_set_results: list[EvalItem]
    dataset_evaluator_results: dict[str, EvalResult] = Field(default_factory=dict)


@dataclass(frozen=True)
class Metric:
    value: float
    source: str  # where in the CLI's output the value came from


def evaluator_means(output: EvalOutput) -> dict[str, Metric]:
    """Each evaluator's mean score over the set's items (what the CLI's console shows as Average), under its name
    and, as coder_eval keys them, its id; and ``*``, coder_eval's macro average: the mean of those means."""
    by_name: dict[str, list[float]] = {}
    by_id: dict[str, list[float]] = {}
    for item in output.evaluation_set_results:
        for run in item.evaluation_run_results:
            if not run.is_line_result:
                by_name.setdefault(run.evaluator_name, []).append(run.result.score)
                if run.evaluator_id:
                    by_id.setdefault(run.evaluator_id, []).append(run.result.score)
    named = _means(by_name, "evaluator")
    ided = _means(by_id, "evaluator id")
    metrics = {**ided, **named}  # an id that is also a name (the CLI's usual ids) keeps the name's entry
    means = [metric.value for metric in (ided or named).values()]
    if means:
        metrics["*"] = Metric(sum(means) / len(means), f"mean of the {len(means)} evaluators' means (macro)")
    return metrics


def _means(grouped: dict[str, list[float]], kind: str) -> dict[str, Metric]:
    return {
        name: Metric(sum(values) / len(values), f"mean of {kind} {name!r} over {len(values)} item results")
        for name, values in grouped.items()
    }


def dataset_metrics(key: str, result: EvalResult) -> dict[str, Metric]:
    """A dataset result's score and the rates its classification details report."""
    details = result.details if isinstance(result.details, dict) else {}
    where = f"datasetEvaluatorResults[{key!r}]"
    found = {} if details.get("metric") == "confusion_matrix" else {key: Metric(result.score, f"{where}.score")}
    per_class = details.get("perClass")
    groups = {"macro": details.get("macro"), "micro": details.get("micro")}
    if isinstance(per_class, dict):
        groups.update({f"perClass.{label}": rates for label, rates in per_class.items()})
    for group, rates in groups.items():
        if not isinstance(rates, dict):
            continue
        for rate in RATES:
            value = rates.get(rate)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                found[f"{key}.{group}.{rate}"] = Metric(float(value), f"{where}.details.{group}.{rate}")
    return found


def eval_metrics(output: EvalOutput) -> dict[str, Metric]:
    """Every metric a threshold can name, from one `uipath eval` output."""
    metrics = evaluator_means(output)
    for key, result in output.dataset_evaluator_results.items():
        metrics.update(dataset_metrics(key, result))
    return metrics


def parse_output(text: str) -> EvalOutput:
    """The CLI's output file; a ValueError names what is wrong with it."""
    try:
        return EvalOutput.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(document)"
        raise ValueError(f"{RESULTS_FILE} is not a `uipath eval` output: {where}: {first['msg']}") from None


def unknown_thresholds(thresholds: dict[str, float], metrics: dict[str, Metric]) -> str | None:
    """The error for threshold keys the run produced no metric for, listing the metrics it did produce."""
    unknown = [name for name in thresholds if name not in metrics]
    if not unknown:
        return None
    named = "; ".join(f"no metric `{name}`{did_you_mean(name, metrics)}" for name in unknown)
    produced = ", ".join(f"`{name}`" for name in sorted(metrics)) or "none"
    return f"{named}. The run produced: {produced}"


def _run_failure(command_error: str | None, exit_code: int | None, stdout: str, stderr: str) -> str:
    """One line: why `uipath eval` failed (the CLI prints its own errors on stdout)."""
    lines = [line.strip() for line in (stdout + "\n" + stderr).splitlines() if line.strip()]
    why = command_error or f"exited {exit_code}"
    return f"uipath eval {why}" + (f": {lines[-1]}" if lines else "")


@checks(UipathEval)
def check(criterion: UipathEval, ctx: CheckContext) -> Outcome:
    """Run `uipath eval` in the sandbox venv, offline, and compare its metrics with the thresholds.

    ``--no-report`` keeps results off UiPath's cloud and telemetry is turned
    off, so an evaluation set of deterministic evaluators needs no login and
    no network. Score: the fraction of thresholds met.
    """
    venv = ctx.sandbox.venv
    if venv is None or not (venv / "bin" / "uipath").is_file():
        return Outcome(0.0, error=MISSING_CLI)
    # a file left by an earlier check or by the agent is not this run's (a link is removed, not its target)
    (ctx.sandbox.root / RESULTS_FILE).unlink(missing_ok=True)
    names = f"{shlex.quote(criterion.agent_name)} {shlex.quote(criterion.eval_set)}"
    command = f"UIPATH_TELEMETRY_ENABLED=false uipath eval --output-file {RESULTS_FILE} --no-report -- {names}"
    run = ctx.sandbox.run(command, EVAL_TIMEOUT_S)
    output_tail = {"stdout": run.stdout[-OUTPUT_TAIL_CHARS:], "stderr": run.stderr[-OUTPUT_TAIL_CHARS:]}
    if not run.ok:
        return Outcome(0.0, output_tail, error=_run_failure(run.error, run.exit_code, run.stdout, run.stderr))
    if not ctx.path(RESULTS_FILE).is_file():
        return Outcome(0.0, output_tail, error=f"uipath eval exited 0 but wrote no {RESULTS_FILE}")
    text, truncated = ctx.read_text(RESULTS_FILE)
    if truncated:
        return Outcome(0.0, error=f"{RESULTS_FILE} is larger than {CRITERION_READ_CAP} bytes, too large to parse")
    output = parse_output(text)
    metrics = eval_metrics(output)
    details: dict[str, Any] = {
        "evaluation_set": output.evaluation_set_name,
        "items": len(output.evaluation_set_results),
        "metrics": {name: {"value": m.value, "source": m.source} for name, m in sorted(metrics.items())},
    }
    error = unknown_thresholds(criterion.thresholds, metrics)
    if error:
        return Outcome(0.0, details, error=error)
    verdicts = {
        name: {"minimum": minimum, "value": metrics[name].value, "passed": meets(metrics[name].value, minimum)}
        for name, minimum in criterion.thresholds.items()
    }
    details["thresholds"] = verdicts
    return Outcome(sum(v["passed"] for v in verdicts.values()) / len(verdicts), details)
