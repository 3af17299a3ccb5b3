"""`coder-eval prune` as an operator runs it: old runs leave the instance and the runs folder together, the
tables keep their history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from ..support.helpers import criterion, run_folders, task_with, write_task

pytestmark = pytest.mark.slow
CLI = Path(sys.executable).parent / "coder-eval"


def coder_eval(*args: str | Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), *map(str, args)],
        env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def size(folder: Path) -> int:
    """The instance's databases (a write-ahead log a reader of this test left open is folded in later, not kept)."""
    return sum(path.stat().st_size for path in folder.rglob("*.db") if path.is_file())


def agentless_project(folder: Path) -> tuple[Path, Path, Path]:
    """A one-row agentless task, and where its instance and runs go."""
    task = write_task(
        folder / "tasks",
        task_with(
            agent={"type": "none"},
            initial_prompt=None,
            sandbox={"python": None},
            success_criteria=[criterion("run_command", command="true")],
        ),
    )
    return task, folder / "home", folder / "runs"


def test_prune_removes_old_runs_from_the_instance_and_the_folder_and_keeps_the_tables(tmp_path: Path) -> None:
    task, home, runs = agentless_project(tmp_path)
    for _ in range(2):
        assert coder_eval("run", task, "--runs-dir", runs, home=home).returncode == 0
    first, second = run_folders(runs)
    second_started = json.loads((second / "run_plan.json").read_text())["started_at"]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        (old_run,) = [r.run_id for r in instance.get_runs() if r.tags.get("coder_eval/run") == str(first)]
    shard = home / "history" / "runs" / f"{old_run}.db"
    assert shard.is_file()
    home_before = size(home)

    dry = coder_eval("prune", "--before", second_started, "--runs-dir", runs, "--dry-run", home=home)
    assert dry.returncode == 0 and "would prune 1 run folder(s) and 1 Dagster run(s)" in dry.stdout
    assert first.is_dir()

    done = coder_eval("prune", "--before", second_started, "--runs-dir", runs, home=home)
    assert done.returncode == 0, done.stderr
    assert "pruned 1 run folder(s)" in done.stdout and "and 1 Dagster run(s)" in done.stdout
    assert not first.exists() and second.is_dir()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        left = instance.get_runs()
        assert [r.tags.get("coder_eval/run") for r in left] == [str(second)]
        events = instance.fetch_materializations(dg.AssetKey("criteria_scores"), limit=10).records
        assert {e.run_id for e in events} == {left[0].run_id}  # the old run's materializations went with it
        check = dg.AssetCheckKey(dg.AssetKey("suite_metrics"), "all_tasks_succeeded")
        checked = instance.event_log_storage.get_asset_check_execution_history(check, limit=10)
        assert {c.run_id for c in checked} == {left[0].run_id}  # and its check results (Dagster's delete keeps them)
    assert not shard.exists() and size(home) < home_before
    index = (runs / "index.html").read_text()
    assert first.name not in index and second.name in index
    history = pd.read_parquet(runs / "tables" / "task_results")
    assert sorted(history["run_id"].unique()) == [first.name, second.name]  # the tables keep both runs

    refused = coder_eval("prune", "--keep-days", "-1", "--runs-dir", runs, home=home)
    assert refused.returncode == 2 and "must be at least 0" in refused.stderr


def test_a_dagster_run_whose_folder_stays_is_kept(tmp_path: Path) -> None:
    """A folder is judged by its run's start and a Dagster run by its creation (a backfill's runs are created
    before its folder's run starts): a run is deleted only with its folder."""
    from coder_eval_dagster.prune_cli import old_runs

    task, home, runs = agentless_project(tmp_path)
    assert coder_eval("run", task, "--runs-dir", runs, home=home).returncode == 0
    (folder,) = run_folders(runs)
    later = datetime.now(UTC) + timedelta(minutes=1)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert old_runs(instance, later, kept={folder.name}) == []
        assert len(old_runs(instance, later, kept=set())) == 1
