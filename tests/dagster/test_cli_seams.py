"""Seams a user met from the command line: usage errors in one line, an internal error's own exit code, and a
failure in an evaluation's last stages ending that evaluation, never the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coder_eval_dagster import cli
from coder_eval_dagster.core import evaluation

from ..support.helpers import run_cli, run_folders, task_with, write, write_task

ROOT = Path(__file__).parent.parent.parent
AGENTLESS = {"agent": {"type": "none"}, "initial_prompt": None, "sandbox": {"python": None}}
CHECK = {"type": "run_command", "command": "true", "description": "ok"}


def installed_cli(tmp_path: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The installed ``coder-eval`` run in ``tmp_path`` (its Dagster home there too)."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "coder-eval"), *map(str, args)],
        cwd=tmp_path,
        env={**os.environ, "DAGSTER_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_limit_zero_is_a_one_line_usage_error_from_the_installed_cli(tmp_path: Path) -> None:
    done = installed_cli(tmp_path, "run", ROOT / "tasks", "--limit", "0")
    assert done.returncode == 2
    assert done.stderr == "coder-eval run: argument --limit: must be at least 1, got 0 (see coder-eval run --help)\n"


def test_an_experiment_not_found_is_named_where_it_was_looked_for(tmp_path: Path) -> None:
    done = installed_cli(tmp_path, "run", ROOT / "tasks", "-e", "nosuch", "--estimate")
    assert done.returncode == 2
    assert done.stderr == (
        "no such experiment file (nor experiments/nosuch.yaml, experiments/nosuch.yml or experiments/nosuch;"
        " no experiment in experiments/): nosuch\n"
    )
    as_path = installed_cli(tmp_path, "run", ROOT / "tasks", "-e", "experiments/nosuch.yaml", "--estimate")
    assert as_path.returncode == 2
    assert (
        as_path.stderr == "no such experiment file (no experiment in experiments/): experiments/nosuch.yaml\n"
    )  # no experiments/experiments/...
    validated = installed_cli(tmp_path, "validate", "-e", "nosuch")  # said as run says it (exit 1: invalid input)
    assert (validated.returncode, validated.stderr) == (1, done.stderr)


def test_a_resume_given_task_paths_says_it_takes_none(tmp_path: Path) -> None:
    """``--run-dir R --resume tasks/``: argparse reads tasks/ as --resume's folder; not the new-run message."""
    done = installed_cli(tmp_path, "run", "--run-dir", "R", "--resume", "tasks/")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "a resume takes no task paths" in done.stderr and "give --run-dir R --resume" in done.stderr


def test_evaluate_leaves_no_run_folder_on_invalid_input(tmp_path: Path) -> None:
    task = write_task(tmp_path, task_with(success_criteria=[CHECK], **AGENTLESS))
    (tmp_path / "graded").mkdir()
    for args in ((task, tmp_path / "nodir"), (tmp_path / "missing.yaml", tmp_path / "graded")):
        done = installed_cli(tmp_path, "evaluate", *args, "--runs-dir", tmp_path / "runs")
        assert done.returncode == 2, done.stderr
        assert not (tmp_path / "runs").exists()
    assert (
        installed_cli(tmp_path, "evaluate", task, tmp_path / "graded", "--runs-dir", tmp_path / "runs").returncode == 0
    )
    assert len(run_folders(tmp_path / "runs")) == 1


def test_an_internal_error_has_its_own_exit_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def broken(args: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "cmd_validate", broken)
    monkeypatch.delenv("CODER_EVAL_DEBUG", raising=False)
    result = run_cli("validate", tmp_path)
    assert result.code == 3 and result.code != 2  # 2 means invalid input or usage
    assert result.err == "coder-eval: internal error: RuntimeError: a bug (set CODER_EVAL_DEBUG=1 for details)\n"


def _two_tasks(folder: Path) -> None:
    for task_id in ("good", "bad"):
        write_task(folder, task_with(task_id=task_id, success_criteria=[CHECK], **AGENTLESS), f"{task_id}.yaml")


def _statuses(runs: Path) -> dict[str, tuple[str, str | None]]:
    (run_dir,) = runs.glob("2*")
    found = {}
    for task_id in ("good", "bad"):
        result = json.loads((run_dir / "default" / task_id / "00" / "task.json").read_text())
        found[task_id] = (result["final_status"], result["error_message"])
    return found


@pytest.mark.parametrize("stage", ["decide", "report"])
def test_a_failure_in_decide_or_finish_is_that_evaluations_error(
    stage: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_tasks(tmp_path / "tasks")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    if stage == "decide":
        real_decide = evaluation.decide

        def decide(result, task):  # type: ignore[no-untyped-def]
            if task.task_id == "bad":
                raise ZeroDivisionError("a scoring bug")
            real_decide(result, task)

        monkeypatch.setattr(evaluation, "decide", decide)
    else:
        from coder_eval_dagster.core.reports import task_html

        real_render = task_html.render_task_html

        def render(result, folder=None):  # type: ignore[no-untyped-def]
            if result.task_id == "bad":
                raise OSError(28, "No space left on device")
            return real_render(result, folder)

        monkeypatch.setattr(task_html, "render_task_html", render)
    done = run_cli("run", tmp_path / "tasks", "--runs-dir", tmp_path / "runs")
    assert done.code == 1, done.err  # the run completed; one evaluation did not pass
    statuses = _statuses(tmp_path / "runs")
    assert statuses["good"] == ("SUCCESS", None)
    status, error = statuses["bad"]
    assert status == "ERROR"
    assert error == (
        "decide failed: ZeroDivisionError: a scoring bug"
        if stage == "decide"
        else "finish failed: OSError: [Errno 28] No space left on device"
    )


def test_evaluate_with_one_argument_points_to_rescore(tmp_path: Path) -> None:
    """coder_eval's ``evaluate RUN_DIR`` re-grades a run; here that is ``rescore``, said in one line."""
    (tmp_path / "runs" / "latest").mkdir(parents=True)
    done = installed_cli(tmp_path, "evaluate", "runs/latest")
    assert done.returncode == 2
    assert done.stderr == (
        "coder-eval evaluate: the following arguments are required: DIR; to grade a finished run again: "
        "coder-eval rescore runs/latest (see coder-eval evaluate --help)\n"
    )
    run = tmp_path / "runs" / "r1"
    for name in ("run_plan.json", "snapshot.pickle"):
        write(run / name, "{}")
    (run / "default" / "t" / "00").mkdir(parents=True)
    inside = installed_cli(tmp_path, "evaluate", "runs/r1/default/t/00")  # an evaluation folder: its run is named
    assert inside.stderr == (
        "coder-eval evaluate: the following arguments are required: DIR; to grade a finished run again: coder-eval "
        f"rescore {run}; to grade this evaluation's sandbox with a task file: coder-eval evaluate TASK "
        "runs/r1/default/t/00 (see coder-eval evaluate --help)\n"
    )
    forgotten = installed_cli(tmp_path, "evaluate", "task.yaml")  # a task file: DIR forgotten, nothing more
    assert forgotten.stderr == (
        "coder-eval evaluate: the following arguments are required: DIR (see coder-eval evaluate --help)\n"
    )
