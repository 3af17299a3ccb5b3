"""rescore re-runs every criterion of an evaluation its run_limits stopped (its status stays), as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..support.helpers import write

pytestmark = pytest.mark.slow
CLI = Path(sys.executable).parent / "coder-eval"
WRITE_A = {"tool": "Write", "path": "a.txt", "content": "a"}


def _coder_eval(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    return subprocess.run([str(CLI), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def _write_task(folder: Path, limits: dict[str, Any], criteria: list[str]) -> None:
    task = {
        "task_id": "t",
        "description": "d",
        "initial_prompt": "p",
        "sandbox": {"python": None},
        "agent": {"type": "replay", "trajectory": "traj.yaml"},
        "run_limits": limits,
        "success_criteria": [{"type": "file_exists", "path": path, "description": path} for path in criteria],
    }
    write(folder / "task.yaml", yaml.safe_dump(task, sort_keys=False))


@pytest.mark.parametrize(
    ("limits", "turns", "status"),
    [
        (
            {"max_output_tokens": 100},
            [{"usage": {"input_tokens": 10, "output_tokens": 500}, "calls": [WRITE_A]}],
            "TOKEN_BUDGET_EXCEEDED",
        ),
        ({"max_usd": 0.01}, [{"usage": {"cost_usd": 0.5}, "calls": [WRITE_A]}], "COST_BUDGET_EXCEEDED"),
        ({"turn_timeout": 10}, [{"calls": [WRITE_A, {"tool": "Bash", "command": "sleep 60"}]}], "TIMEOUT"),
    ],
    ids=["token_budget", "cost_budget", "timeout"],
)
def test_rescore_reruns_the_criteria_of_a_stopped_evaluation_and_keeps_its_status(
    tmp_path: Path, limits: dict[str, Any], turns: list[dict[str, Any]], status: str
) -> None:
    write(tmp_path / "traj.yaml", yaml.safe_dump({"turns": turns}))
    _write_task(tmp_path, limits, ["a.txt"])
    ran = _coder_eval(tmp_path, "run", "task.yaml", "--runs-dir", str(tmp_path / "runs"))
    assert ran.returncode == 1, ran.stdout + ran.stderr
    (result_file,) = (tmp_path / "runs").glob("latest/default/t/00/task.json")
    before = json.loads(result_file.read_text())
    assert before["final_status"] == status
    assert [c["description"] for c in before["success_criteria_results"]] == ["a.txt"]

    # after the run, the criterion is changed (same type, same place) and one is added
    _write_task(tmp_path, limits, ["b.txt", "a.txt"])
    rescored = _coder_eval(tmp_path, "rescore", str(result_file.parents[3]))
    assert rescored.returncode == 1, rescored.stdout + rescored.stderr
    after = json.loads(result_file.read_text())
    assert after["final_status"] == status
    # the evaluation's own time window is kept (docs/running.md, Durations); the rescore's is its own
    assert (after["started_at"], after["completed_at"]) == (before["started_at"], before["completed_at"])
    assert after["rescored_at"] > before["completed_at"]
    assert [(c["description"], c["score"]) for c in after["success_criteria_results"]] == [
        ("b.txt", 0.0),
        ("a.txt", 1.0),
    ]


def test_rescore_runs_no_criterion_of_an_error_evaluation(tmp_path: Path) -> None:
    write(tmp_path / "traj.yaml", yaml.safe_dump({"turns": [{"calls": [WRITE_A]}]}))
    _write_task(tmp_path, {}, ["a.txt"])
    task = yaml.safe_load((tmp_path / "task.yaml").read_text()) | {"pre_run": [{"command": "exit 3"}]}
    write(tmp_path / "task.yaml", yaml.safe_dump(task))
    assert _coder_eval(tmp_path, "run", "task.yaml", "--runs-dir", str(tmp_path / "runs")).returncode == 1
    (result_file,) = (tmp_path / "runs").glob("latest/default/t/00/task.json")
    rescored = _coder_eval(tmp_path, "rescore", str(result_file.parents[3]))
    assert rescored.returncode == 1, rescored.stdout + rescored.stderr
    after = json.loads(result_file.read_text())
    assert after["final_status"] == "ERROR" and "pre_run command 1 failed" in after["error_message"]
    assert after["success_criteria_results"] == []


def test_rescore_keeps_the_runs_start_end_and_duration(tmp_path: Path) -> None:
    """A rescore minutes later must not stretch the run's wall time (CI gates and dashboards read it)."""
    write(tmp_path / "traj.yaml", yaml.safe_dump({"turns": [{"calls": [WRITE_A]}]}))
    _write_task(tmp_path, {}, ["a.txt"])
    ran = _coder_eval(tmp_path, "run", "task.yaml", "--runs-dir", str(tmp_path / "runs"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (run_json,) = (tmp_path / "runs").glob("*T*/run.json")
    timing = ("start_time", "end_time", "total_duration_seconds")
    before = json.loads(run_json.read_text())
    time.sleep(1.5)
    rescored = _coder_eval(tmp_path, "rescore", str(run_json.parent))
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    after = json.loads(run_json.read_text())
    assert [after[key] for key in timing] == [before[key] for key in timing]
    (result_file,) = run_json.parent.glob("default/t/00/task.json")
    assert json.loads(result_file.read_text())["rescored_at"] is not None  # the rescore's own time is recorded there


def test_rescore_keeps_an_evaluated_row_whose_dataset_row_was_removed_since(tmp_path: Path) -> None:
    """The run's evaluations, run.json, its tables and its suite metrics stay one set: a row removed from the
    dataset after the run is rescored as the run had it, and the rescore says so."""
    write(tmp_path / "rows.jsonl", "".join(json.dumps({"id": row}) + "\n" for row in "abc"))
    task = {
        "task_id": "t",
        "description": "d",
        "agent": {"type": "none"},
        "sandbox": {"python": None},
        "dataset": {"paths": ["rows.jsonl"]},
        "success_criteria": [{"type": "run_command", "command": "true", "description": "c"}],
    }
    write(tmp_path / "task.yaml", yaml.safe_dump(task, sort_keys=False))
    assert _coder_eval(tmp_path, "run", "task.yaml", "--runs-dir", str(tmp_path / "runs")).returncode == 0
    write(tmp_path / "rows.jsonl", "".join(json.dumps({"id": row}) + "\n" for row in "ab"))
    (run_dir,) = (tmp_path / "runs").glob("2*")
    rescored = _coder_eval(tmp_path, "rescore", str(run_dir))
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    assert "1 evaluated row-task(s) no longer in the task files" in rescored.stderr and "default/t/c" in rescored.stderr
    summary = json.loads((run_dir / "run.json").read_text())
    assert [row["task_id"] for row in summary["task_results"]] == ["t/a", "t/b", "t/c"]
    results = [json.loads(path.read_text()) for path in sorted(run_dir.glob("default/t/*/00/task.json"))]
    assert [bool(result.get("rescored_at")) for result in results] == [True, True, True]
    (entry,) = summary["suite"]
    assert entry["metrics"]["count"] == 3, entry


def test_rescore_through_the_latest_link_names_the_run_not_the_link(tmp_path: Path) -> None:
    task = {
        "task_id": "t",
        "description": "d",
        "agent": {"type": "none"},
        "sandbox": {"python": None},
        "success_criteria": [{"type": "run_command", "command": "true", "description": "c"}],
    }
    write(tmp_path / "task.yaml", yaml.safe_dump(task, sort_keys=False))
    write(
        tmp_path / "ab.yaml", "experiment_id: ab\ntasks: [task.yaml]\nvariants:\n  - variant_id: a\n  - variant_id: b\n"
    )
    assert _coder_eval(tmp_path, "run", "-e", "ab.yaml", "--runs-dir", str(tmp_path / "runs")).returncode == 0
    (run_dir,) = (tmp_path / "runs").glob("2*")
    rescored = _coder_eval(tmp_path, "rescore", "runs/latest")
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    page = (run_dir / "comparison.html").read_text()
    assert f"Comparison of {run_dir.name}" in page and "Comparison of latest" not in page


GOOD = """
task_id: good
description: d
agent: {type: none}
sandbox: {python: null}
pre_run: [{command: "echo hi > out.txt"}]
success_criteria: [{type: file_exists, path: out.txt, description: out.txt}]
"""


def test_a_rescore_says_why_a_task_file_no_longer_defines_its_evaluations(tmp_path: Path) -> None:
    """A task file made invalid since the run (every weight 0): the rescore said its evaluations were "no longer in
    the task files", and never why. A file the run left out as it is now (``skip: true``) is not news: it was said
    "not valid now", its path as the run recorded it compared with the rescore's absolute one."""
    write(tmp_path / "tasks/good.yaml", GOOD)
    write(tmp_path / "tasks/other.yaml", GOOD.replace("task_id: good", "task_id: other"))
    write(tmp_path / "tasks/parked.yaml", GOOD.replace("task_id: good", "task_id: parked\nskip: true"))
    ran = _coder_eval(tmp_path, "run", "tasks", "--runs-dir", str(tmp_path / "runs"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    write(
        tmp_path / "tasks/other.yaml",
        GOOD.replace("task_id: good", "task_id: other").replace("out.txt}", "out.txt, weight: 0}"),
    )
    rescored = _coder_eval(tmp_path, "rescore", str(tmp_path / "runs" / "latest"))
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    said = rescored.stderr.splitlines()
    assert any(
        line.startswith("coder-eval rescore: left out now: ") and "other.yaml:" in line and "weight 0" in line
        for line in said
    ), said
    assert any("no longer in the task files" in line and "default/other" in line for line in said), said
    assert not [line for line in said if "parked.yaml" in line], said  # left out then as now: nothing to say


def test_rescore_scores_the_run_as_it_was(tmp_path: Path) -> None:
    """A task the run left out (invalid then, fixed since) stays out of the rescore, and stays recorded as left
    out: the verdict flipped to PASSED and `report --rebuild` then called the run incomplete. An evaluation whose
    preserved sandbox is gone is refused before anything is scored: it turned SUCCESS into FAILURE silently."""
    write(tmp_path / "tasks/good.yaml", GOOD)
    write(
        tmp_path / "tasks/other.yaml",
        GOOD.replace("task_id: good", "task_id: other").replace("out.txt}", "out.txt, weight: -1}"),
    )
    ran = _coder_eval(tmp_path, "run", "tasks", "--runs-dir", str(tmp_path / "runs"))
    assert ran.returncode == 1 and "1 skipped" in ran.stdout, ran.stdout + ran.stderr
    write(tmp_path / "tasks/other.yaml", GOOD.replace("task_id: good", "task_id: other"))  # fixed since
    run_dir = tmp_path / "runs" / "latest"
    rescored = _coder_eval(tmp_path, "rescore", str(run_dir))
    assert rescored.returncode == 1, rescored.stdout + rescored.stderr
    summary = json.loads((run_dir / "run.json").read_text())
    assert (summary["passed"], summary["tasks_run"]) == (False, 1)
    assert [skipped["path"] for skipped in summary["skipped_tasks"]] == ["tasks/other.yaml"]
    assert _coder_eval(tmp_path, "report", str(run_dir), "--rebuild").returncode == 0
    summary_text = (run_dir / "run.json").read_text()
    (run_dir / "run.json").unlink()
    no_summary = _coder_eval(tmp_path, "rescore", str(run_dir))  # stopped before its summary: --resume finishes it
    assert no_summary.returncode == 2, no_summary.stderr
    assert "its run.json and table rows were not written" in no_summary.stderr and "--resume" in no_summary.stderr
    # a rebuild of such a run writes its table rows too (it left the run read as finished but not in the tables)
    tables = tmp_path / "runs" / "tables"
    mine = sorted(tables.glob(f"*/*/{run_dir.resolve().name}.parquet"))
    assert len(mine) >= 4
    for table_file in mine:
        table_file.unlink()
    assert _coder_eval(tmp_path, "report", str(run_dir), "--rebuild").returncode == 0
    assert sorted(tables.glob(f"*/*/{run_dir.resolve().name}.parquet")) == mine
    (run_dir / "run.json").write_text(summary_text)

    result = run_dir / "default" / "good" / "00" / "task.json"
    before = result.read_text()
    subprocess.run(["rm", "-rf", str(result.parent / "sandbox")], check=True, timeout=60)
    refused = _coder_eval(tmp_path, "rescore", str(run_dir))
    assert refused.returncode == 2 and "have no preserved sandbox to grade" in refused.stderr, refused.stderr
    assert "default/good/00" in refused.stderr and result.read_text() == before


def test_a_rescore_labels_the_result_by_the_task_it_graded_by(tmp_path: Path) -> None:
    """A rescore graded by the edited task file and recorded it in task_config, but kept the old tags and
    description beside it: one task.json held two versions of the task, and the tables' tags disagreed with the
    criteria they held."""
    import pandas as pd

    write(tmp_path / "traj.yaml", yaml.safe_dump({"turns": [{"calls": [WRITE_A]}]}))
    _write_task(tmp_path, {}, ["a.txt"])
    assert _coder_eval(tmp_path, "run", "task.yaml", "--runs-dir", str(tmp_path / "runs")).returncode == 0
    task = yaml.safe_load((tmp_path / "task.yaml").read_text())
    write(tmp_path / "task.yaml", yaml.safe_dump(task | {"description": "edited", "tags": ["new-tag"]}))
    (run_json,) = (tmp_path / "runs").glob("*T*/run.json")
    rescored = _coder_eval(tmp_path, "rescore", str(run_json.parent))
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    result = json.loads((run_json.parent / "default/t/00/task.json").read_text())
    assert (result["task_description"], result["tags"]) == ("edited", ["new-tag"])
    assert json.loads(run_json.read_text())["task_results"][0]["tags"] == ["new-tag"]
    table = pd.read_parquet(tmp_path / "runs" / "tables" / "task_results")
    assert list(table["tags"].iloc[0]) == ["new-tag"]


def test_a_kept_sandbox_linked_elsewhere_is_refused_not_graded_there(tmp_path: Path) -> None:
    """A run folder handed around whose ``sandbox/`` links out (to ``/``): the rescore ran the criteria there, with
    write access, and walked the whole target as root taking setuid bits off its programs (host binaries)."""
    write(tmp_path / "tasks/good.yaml", GOOD.replace("echo hi > out.txt", "echo hi > out.txt; echo hi > precious"))
    ran = _coder_eval(tmp_path, "run", "tasks", "--runs-dir", str(tmp_path / "runs"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    victim = tmp_path / "victim"
    write(victim / "precious", "keep\n")
    write(victim / "out.txt", "x\n")
    (victim / "program").write_text("#!/bin/sh\n")
    os.chmod(victim / "program", 0o4755)
    kept = (tmp_path / "runs" / "latest").resolve() / "default" / "good" / "00" / "sandbox"
    shutil.rmtree(kept)
    kept.symlink_to(victim)
    rescored = _coder_eval(tmp_path, "rescore", str(tmp_path / "runs" / "latest"))
    assert rescored.returncode == 2, rescored.stdout + rescored.stderr
    assert "no preserved sandbox to grade (removed or linked elsewhere" in rescored.stderr
    assert "Traceback" not in rescored.stderr
    assert (victim / "precious").read_text() == "keep\n"
    assert stat.S_IMODE((victim / "program").stat().st_mode) == 0o4755
