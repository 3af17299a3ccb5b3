"""`uipath_eval` reads the real CLI's output: metrics, their sources, the threshold verdicts and the errors.

tests/data/uipath_eval_output.json was written by `uipath eval` (uipath 2.14.44, offline, --no-report)
for the triage agent of examples/uipath over four tickets (refund, crash, hours, slow; "slow" misfiled
as other), with three evaluators: `category` (exact match on the category, with fscore, precision,
recall and confusion_matrix aggregators over billing / technical / other), `output` (JSON similarity)
and `lines` (exact match, line by line, so its items also carry line sub-results). The confusion matrix
it records is [[1,0,0],[0,1,0],[0,1,1]] (rows predicted, columns expected).
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from coder_eval_dagster.core.check_context import CheckContext
from coder_eval_dagster.core.criteria import criterion_union
from coder_eval_dagster.core.criteria.uipath_eval import (
    MISSING_CLI,
    RESULTS_FILE,
    eval_metrics,
    parse_output,
    unknown_thresholds,
)
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox
from coder_eval_dagster.core.scoring import criterion_result, run_check

RECORDED = (Path(__file__).parent.parent / "data" / "uipath_eval_output.json").read_text()
PARSE = TypeAdapter(criterion_union())


def test_recorded_output_gives_evaluator_means_without_line_results() -> None:
    metrics = eval_metrics(parse_output(RECORDED))
    assert metrics["category"].value == pytest.approx(3 / 4)
    assert metrics["output"].value == pytest.approx((3 + 5 / 9) / 4)  # "slow" matches 1.11 of 2 leaves
    assert metrics["lines"].value == pytest.approx(3 / 4)
    assert metrics["category"].source == "mean of evaluator 'category' over 4 item results"
    assert not any(name.startswith("lines (Line") for name in metrics)


def test_recorded_output_gives_dataset_scores_and_their_rates() -> None:
    metrics = eval_metrics(parse_output(RECORDED))
    # per class: billing P1 R1 F1, technical P1 R1/2 F2/3, other P1/2 R1 F2/3
    assert metrics["category::fscore"].value == pytest.approx(7 / 9)
    assert metrics["category::precision"].value == pytest.approx(5 / 6)
    assert metrics["category::recall"].value == pytest.approx(5 / 6)
    assert metrics["category::fscore.micro.precision"].value == pytest.approx(3 / 4)
    assert metrics["category::fscore.perClass.other.precision"].value == pytest.approx(1 / 2)
    assert metrics["category::recall.perClass.technical.recall"].value == pytest.approx(1 / 2)
    assert metrics["category::fscore"].source == "datasetEvaluatorResults['category::fscore'].score"
    assert (
        metrics["category::fscore.macro.fScore"].source
        == "datasetEvaluatorResults['category::fscore'].details.macro.fScore"
    )
    # a confusion matrix has no scalar score: its 0.0 placeholder is no metric
    assert not any(name.startswith("category::confusion_matrix") for name in metrics)


def test_a_dataset_result_without_classification_details_gives_its_score_only() -> None:
    output = {
        "evaluationSetName": "s",
        "evaluationSetResults": [],
        "datasetEvaluatorResults": {"custom::thing": {"score": 0.5, "details": "free text"}},
    }
    metrics = eval_metrics(parse_output(json.dumps(output)))
    assert {name: m.value for name, m in metrics.items()} == {"custom::thing": 0.5}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{}", "is not a `uipath eval` output: evaluationSetName: Field required"),
        ("not json", "is not a `uipath eval` output: (document): Invalid JSON"),
        (
            '{"evaluationSetName": "s", "evaluationSetResults": [{"evaluationName": "a"}]}',
            "evaluationSetResults.0.evaluationRunResults: Field required",
        ),
    ],
)
def test_an_output_of_another_shape_is_an_error_naming_the_file_and_field(text: str, expected: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_output(text)
    assert str(raised.value).startswith(RESULTS_FILE) and expected in str(raised.value)


def test_unknown_threshold_keys_list_the_metrics_with_did_you_mean() -> None:
    metrics = eval_metrics(parse_output(RECORDED))
    error = unknown_thresholds({"category::fscor": 0.5, "category": 0.5, "f1": 0.5}, metrics)
    assert error is not None
    assert error.startswith("no metric `category::fscor` (did you mean `category::fscore`?); no metric `f1`.")
    assert "The run produced: `*`, `category`, `category::fscore`, " in error and "`output`" in error
    assert unknown_thresholds({"category": 0.5}, metrics) is None


# --------------------------------------------------------------------------- the check, with a stand-in CLI


@pytest.fixture
def sandbox(tmp_path: Path) -> TempdirSandbox:
    box = TempdirSandbox(tmp_path / "sandbox", SandboxConfig(python={"env_packages": ["uipath"]}))
    box.root.mkdir()
    return box


def _stand_in_cli(sandbox: TempdirSandbox, script: str) -> None:
    """A `uipath` in the sandbox venv running ``script`` (the real one runs in tests/system)."""
    cli = sandbox.root / ".venv" / "bin" / "uipath"
    cli.parent.mkdir(parents=True)
    cli.write_text(f"#!/bin/sh\n{script}\n")
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)


def _check(sandbox: TempdirSandbox, thresholds: dict[str, float]):
    criterion = PARSE.validate_python(
        {
            "type": "uipath_eval",
            "description": "d",
            "agent_name": "triage",
            "eval_set": "t.json",
            "thresholds": thresholds,
        }
    )
    context = CheckContext(sandbox, sandbox.root.parent, None, run=RunContext.create())
    return criterion_result(0, criterion, run_check(criterion, context), None)


def test_the_check_runs_the_cli_offline_and_scores_the_fraction_of_thresholds_met(sandbox: TempdirSandbox) -> None:
    (sandbox.root / "recorded.json").write_text(RECORDED)
    _stand_in_cli(sandbox, f'echo "$UIPATH_TELEMETRY_ENABLED $*" > args.txt; cp recorded.json {RESULTS_FILE}')
    result = _check(sandbox, {"category": 0.7, "category::fscore": 0.8, "output": 0.8})
    assert (sandbox.root / "args.txt").read_text().strip() == (
        f"false eval --output-file {RESULTS_FILE} --no-report -- triage t.json"
    )
    assert result.error is None and result.score == pytest.approx(2 / 3)
    assert result.details["evaluation_set"] == "tickets" and result.details["items"] == 4
    assert result.details["thresholds"]["category::fscore"] == {
        "minimum": 0.8,
        "value": pytest.approx(7 / 9),
        "passed": False,
    }
    assert result.details["metrics"]["output"]["source"] == "mean of evaluator 'output' over 4 item results"


def test_a_results_file_left_in_the_sandbox_is_not_read(sandbox: TempdirSandbox) -> None:
    (sandbox.root / RESULTS_FILE).write_text(RECORDED)
    _stand_in_cli(sandbox, "exit 0")
    result = _check(sandbox, {"category": 0.5})
    assert result.error == f"uipath eval exited 0 but wrote no {RESULTS_FILE}"


def test_a_failing_cli_is_an_error_with_its_last_line(sandbox: TempdirSandbox) -> None:
    _stand_in_cli(sandbox, "echo '❌ Entrypoint '\\''nope'\\'' not found in uipath.json. Available: triage'; exit 1")
    result = _check(sandbox, {"category": 0.5})
    assert result.score == 0.0
    assert result.error == "uipath eval exited 1: ❌ Entrypoint 'nope' not found in uipath.json. Available: triage"
    assert "Available: triage" in result.details["stdout"]


@pytest.mark.parametrize("python", [None, {"env_packages": ["pytest"]}], ids=["no-venv", "venv-without-uipath"])
def test_no_uipath_in_the_sandbox_venv_names_env_packages(tmp_path: Path, python: dict | None) -> None:
    box = TempdirSandbox(tmp_path / "sandbox", SandboxConfig(python=python))
    box.root.mkdir()
    result = _check(box, {"category": 0.5})
    assert result.error == MISSING_CLI and "sandbox.python.env_packages" in MISSING_CLI


def test_evaluator_ids_and_the_macro_average_are_metrics_as_coder_eval_names_them() -> None:
    """coder_eval keys its thresholds by `evaluatorId` and `*` (the mean of the evaluators' means): such a task
    scored 0 here with "no metric"."""
    run = {"evaluationName": "a", "evaluationRunResults": []}
    items = [
        {
            **run,
            "evaluationRunResults": [
                {"evaluatorName": "ExactMatch", "evaluatorId": "ev-123", "result": {"score": 1.0}},
                {"evaluatorName": "Similarity", "evaluatorId": "ev-456", "result": {"score": score}},
            ],
        }
        for score in (0.25, 0.75)
    ]
    output = {"evaluationSetName": "s", "evaluationSetResults": items}
    metrics = {name: m.value for name, m in eval_metrics(parse_output(json.dumps(output))).items()}
    assert metrics == {"ExactMatch": 1.0, "Similarity": 0.5, "ev-123": 1.0, "ev-456": 0.5, "*": 0.75}
    recorded = eval_metrics(parse_output(RECORDED))  # the CLI's ids are the evaluators' names: no second entry
    assert recorded["*"].value == pytest.approx((3 / 4 + (3 + 5 / 9) / 4 + 3 / 4) / 3)
