"""The released coder-eval (0.12.16 from PyPI, scripts/install-coder-eval-oracle.sh) reads our run folder as its own.

Its ``coder-eval report RUN --rebuild`` validates every task.json against its
``EvaluationResult`` and rebuilds run.json from them with its own row
derivation; on a copy of our run (two variants, two replicates, a failing
task, a replayed agent, a dataset task with a suite threshold) it must count
what we count, skip no file, and derive every row field as we wrote it. Its
models read our run.json, experiment.json, variant.json and suite.json too.
The oracle needs Python 3.13: without one the install script exits 3 and the
test skips, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ..support.report_project import EVALUATIONS, FAILED, SUCCEEDED, write_project
from .conftest import SystemCli

pytestmark = pytest.mark.xdist_group("coder-eval-oracle")  # one worker: the install runs once

ROOT = Path(__file__).parent.parent.parent
INSTALL = ROOT / "scripts" / "install-coder-eval-oracle.sh"
NO_PYTHON_313 = 3
# Its files, each with the model it validates them against.
MODELS = {
    "run.json": "coder_eval.models.RunSummary",
    "experiment.json": "coder_eval.models.experiment.ExperimentResult",
    "base/variant.json": "coder_eval.models.experiment.VariantAggregate",
    "hint/variant.json": "coder_eval.models.experiment.VariantAggregate",
    "base/labels/suite.json": "coder_eval.models.results.SuiteRollup",
    "hint/labels/suite.json": "coder_eval.models.results.SuiteRollup",
}
VALIDATE = """
import importlib, sys
from pathlib import Path
for name, path in zip(sys.argv[1::2], sys.argv[2::2]):
    module, _, model = name.rpartition(".")
    getattr(importlib.import_module(module), model).model_validate_json(Path(path).read_text())
print("validated", len(sys.argv) // 2)
"""


@pytest.fixture(scope="module")
def oracle() -> Path:
    """The oracle's ``coder-eval``, installed (once) by the script; a skip when no Python 3.13 can run it."""
    done = subprocess.run(["bash", str(INSTALL)], capture_output=True, text=True, timeout=900)
    if done.returncode == NO_PYTHON_313:
        pytest.skip(f"the released coder-eval needs Python 3.13: {done.stderr.strip()}")
    assert done.returncode == 0, done.stdout + done.stderr
    return Path(done.stdout.strip().splitlines()[-1])


def oracle_environment(system_cli: SystemCli) -> dict[str, str]:
    """No telemetry (on by default in the release), wide lines (rich wraps its output at the terminal's width)."""
    return system_cli.environment({"TELEMETRY_ENABLED": "false", "COLUMNS": "250", "TERM": "dumb"})


def run_oracle(oracle: Path, system_cli: SystemCli, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The release's ``coder-eval ARGS`` in the test's folder, as a user beside ours runs it."""
    return subprocess.run(
        [str(oracle), *map(str, args)],
        cwd=system_cli.folder,
        capture_output=True,
        text=True,
        env=oracle_environment(system_cli),
        timeout=300,
    )


def test_the_released_coder_eval_aggregates_our_run_as_its_own(oracle: Path, system_cli: SystemCli) -> None:
    experiment = write_project(system_cli.folder)
    outcome = system_cli("run", "-e", experiment, "--runs-dir", system_cli.runs, "-j", "2", env={}, timeout=600)
    assert outcome.code == 1, outcome.output  # the failing tasks
    run_dir = (system_cli.runs / "latest").resolve()
    copy = system_cli.folder / "copy" / run_dir.name  # --rebuild rewrites run.json and run.md in place
    shutil.copytree(run_dir, copy)

    env = oracle_environment(system_cli)
    shown = subprocess.run([str(oracle), "report", str(run_dir)], capture_output=True, text=True, env=env, timeout=300)
    assert shown.returncode == 0, shown.stdout + shown.stderr  # it reads experiment.md first (before: a traceback)
    assert "experiment.md" in shown.stdout and "Experiment ab" in shown.stdout, shown.stdout
    rebuilt = subprocess.run(
        [str(oracle), "report", str(copy), "--rebuild"], capture_output=True, text=True, env=env, timeout=300
    )
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert f"Aggregated {EVALUATIONS} task(s) ({SUCCEEDED} ok / {FAILED} fail / 0 err)" in rebuilt.stdout
    assert "skipping unreadable/malformed task.json" not in rebuilt.stderr, rebuilt.stderr

    ours = json.loads((run_dir / "run.json").read_text())
    theirs = json.loads((copy / "run.json").read_text())
    assert [theirs[name] for name in ("tasks_run", "tasks_succeeded", "tasks_failed", "tasks_error")] == [
        ours[name] for name in ("tasks_run", "tasks_succeeded", "tasks_failed", "tasks_error")
    ]
    assert (theirs["pass_rate"], theirs["cost_complete"]) == (ours["pass_rate"], ours["cost_complete"])
    assert theirs["agent_cost_usd"] == pytest.approx(ours["agent_cost_usd"])
    by_key = {(r["variant_id"], r["task_id"], r["replicate_index"]): r for r in ours["task_results"]}
    for row in theirs["task_results"]:  # every field of its row, derived by it from our task.json, as we wrote it
        own = by_key[(row["variant_id"], row["task_id"], row["replicate_index"])]
        differing = {
            name: (own.get(name), value)
            for name, value in row.items()
            if own.get(name) != (pytest.approx(value) if isinstance(value, float) else value)
        }
        assert differing == {}, (row["task_id"], differing)

    python = oracle.parent / "python"
    files = [str(part) for name, model in MODELS.items() for part in (model, run_dir / name)]
    validated = subprocess.run(
        [str(python), "-c", VALIDATE, *files], capture_output=True, text=True, env=env, timeout=300
    )
    assert validated.returncode == 0, validated.stderr
    assert validated.stdout.strip() == f"validated {len(MODELS)}"


def test_evaluate_grades_the_directory_and_the_release_reads_its_task_json(
    oracle: Path, system_cli: SystemCli, tmp_path: Path
) -> None:
    task = write_project(tmp_path / "project").parent.parent / "tasks" / "fail.yaml"  # needs nowhere.txt
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    missing = system_cli("evaluate", task, workspace, "--run-dir", tmp_path / "missing", env={})
    assert missing.code == 1, missing.output
    assert "Passed: 0/1" in missing.out and "1 criterion/criteria failed." in missing.out

    (workspace / "nowhere.txt").write_text("here after all\n")
    graded = system_cli("evaluate", task, workspace, "--run-dir", tmp_path / "ev", env={})
    assert graded.code == 0, graded.output
    assert "Passed: 1/1" in graded.out and "Informational (weight=0, not gated): 1" in graded.out
    assert "All criteria passed! ✓" in graded.out
    assert sorted(os.listdir(workspace)) == ["nowhere.txt"]  # graded in a copy: the directory is left as it was
    result = json.loads((tmp_path / "ev" / "task.json").read_text())
    assert (result["variant_id"], result["final_status"], result["replicate_index"]) == ("evaluate", "SUCCESS", 0)
    assert (tmp_path / "ev" / "sandbox" / "nowhere.txt").is_file() and (tmp_path / "ev" / "task.html").is_file()
    validated = subprocess.run(
        [
            str(oracle.parent / "python"),
            "-c",
            VALIDATE,
            "coder_eval.models.EvaluationResult",
            tmp_path / "ev/task.json",
        ],
        capture_output=True,
        text=True,
        env=oracle_environment(system_cli),
        timeout=300,
    )
    assert validated.returncode == 0, validated.stderr


def test_the_release_reads_a_dialog_s_task_json(oracle: Path, system_cli: SystemCli) -> None:
    """Its ``simulation`` block takes no key but its own (extra forbidden): ours sit beside it in task.json (inside,
    the release skipped every dialog evaluation as malformed)."""
    shutil.copytree(ROOT / "tasks" / "replay_dialog", system_cli.folder / "replay_dialog")
    outcome = system_cli("run", system_cli.folder / "replay_dialog", "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 0, outcome.output
    (task_json,) = (system_cli.runs / "latest").resolve().glob("default/*/00/task.json")
    assert "simulator_token_usage" in json.loads(task_json.read_text())
    env = oracle_environment(system_cli)
    validated = subprocess.run(
        [str(oracle.parent / "python"), "-c", VALIDATE, "coder_eval.models.EvaluationResult", str(task_json)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert validated.returncode == 0, validated.stderr
