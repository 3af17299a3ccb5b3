"""The shipped examples/uipath task, as a user runs it: the installed `coder-eval`, the real `uipath` CLI.

One `coder-eval run` over four copies of the example that differ only in their criterion, so the
sandbox venvs install `uipath` from the package index into the run's uv cache once (--concurrency 1:
the first install fills the cache, the next ones reuse it). The agent misfiles one of six tickets:
category_match 5/6, category_match::fscore (macro F1) 37/45, output_similarity (5 + 5/9) / 6.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.slow
CLI = Path(sys.executable).parent / "coder-eval"
EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "uipath"
TASK = "uipath_triage"


def _coder_eval(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    return subprocess.run(
        [str(CLI), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, start_new_session=True
    )


def _variant(folder: Path, task_id: str, criterion: dict[str, Any], sandbox: dict[str, Any] | None = None) -> None:
    """A copy of the example task with another id and its criterion changed."""
    task = yaml.safe_load((folder / f"{TASK}.yaml").read_text())
    task["task_id"] = task_id
    task["success_criteria"][0].update(criterion)
    task["sandbox"].update(sandbox or {})
    (folder / f"{task_id}.yaml").write_text(yaml.safe_dump(task, sort_keys=False))


def _criterion(runs: Path, task_id: str) -> dict[str, Any]:
    (result,) = runs.glob(f"latest/default/{task_id}/00/task.json")
    (criterion,) = json.loads(result.read_text())["success_criteria_results"]
    return criterion


def test_the_uipath_example_scored_by_the_real_cli(tmp_path: Path) -> None:
    tasks = shutil.copytree(EXAMPLE, tmp_path / "tasks")
    thresholds = yaml.safe_load((tasks / f"{TASK}.yaml").read_text())["success_criteria"][0]["thresholds"]
    _variant(tasks, "raised", {"thresholds": {**thresholds, "category_match::fscore": 0.9}})
    _variant(tasks, "wrong_key", {"thresholds": {**thresholds, "category_match::fscor": 0.8}})
    _variant(tasks, "no_cli", {}, {"python": None})
    validated = _coder_eval(tmp_path, "validate", str(EXAMPLE / f"{TASK}.yaml"))
    assert validated.returncode == 0, validated.stdout + validated.stderr

    runs = tmp_path / "runs"
    done = _coder_eval(tmp_path, "run", str(tasks), "--runs-dir", str(runs), "--concurrency", "1")
    assert done.returncode == 1, done.stdout + done.stderr  # three of the four fail on purpose
    assert "Traceback" not in done.stdout + done.stderr

    met = _criterion(runs, TASK)
    assert (met["score"], met["passed"], met["error"]) == (1.0, True, None), met
    metrics = {name: metric["value"] for name, metric in met["evidence"]["metrics"].items()}
    assert metrics["category_match"] == pytest.approx(5 / 6)
    assert metrics["category_match::fscore"] == pytest.approx(37 / 45)
    assert metrics["category_match::precision.micro.recall"] == pytest.approx(5 / 6)
    assert metrics["output_similarity"] == pytest.approx((5 + 5 / 9) / 6)
    assert met["evidence"]["metrics"]["category_match::fscore"]["source"] == (
        "datasetEvaluatorResults['category_match::fscore'].score"
    )
    assert all(verdict["passed"] for verdict in met["evidence"]["thresholds"].values())

    raised = _criterion(runs, "raised")
    assert (raised["score"], raised["passed"], raised["error"]) == (pytest.approx(2 / 3), False, None), raised
    assert raised["evidence"]["thresholds"]["category_match::fscore"]["passed"] is False

    wrong = _criterion(runs, "wrong_key")
    assert (wrong["score"], wrong["passed"]) == (0.0, False)
    assert wrong["error"].startswith("no metric `category_match::fscor` (did you mean `category_match::fscore`?).")
    produced = "The run produced: `*`, `category-match`, `category_match`, `category_match::fscore`, "
    assert produced in wrong["error"]  # (its evaluators' ids, `category-match`, are metrics too, as coder_eval's)
    assert "category_match::fscore" in wrong["evidence"]["metrics"]

    no_cli = _criterion(runs, "no_cli")
    assert no_cli["score"] == 0.0 and "sandbox.python.env_packages" in no_cli["error"]
