"""`coder-eval prune` as an operator runs it: old runs leave the instance and the runs folder together, the
tables keep their history."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from ..support.helpers import criterion, run_folders, task_with, write_task

pytestmark = pytest.mark.slow
CLI = Path(sys.executable).parent / "coder-eval"


def coder_eval(*args: str | Path, home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), *map(str, args)],
        env={**os.environ, "DAGSTER_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def size(folder: Path) -> int:
    """The instance's databases (a write-ahead log a reader of this test left open is folded in later, not kept)."""
    return sum(path.stat().st_size for path in folder.rglob("*.db") if path.is_file())


def agentless_project(folder: Path, **fields: Any) -> tuple[Path, Path, Path]:
    """A one-row agentless task (with ``fields`` over it), and where its instance and runs go."""
    task = write_task(
        folder / "tasks",
        task_with(
            agent={"type": "none"},
            initial_prompt=None,
            sandbox={"python": None},
            success_criteria=[criterion("run_command", command="true")],
            **fields,
        ),
    )
    return task, folder / "home", folder / "runs"


DEEP = "python3 -c \"import os\nfor _ in range(1500): os.mkdir('a'); os.chdir('a')\""  # deeper than recursion goes


def test_prune_removes_old_runs_from_the_instance_and_the_folder_and_keeps_the_tables(tmp_path: Path) -> None:
    """Their sandboxes too, however deep the agent made their folders (pruned by recursion: RecursionError); a
    sparse terabyte the agent left counts as the disk it took, not its size."""
    task, home, runs = agentless_project(tmp_path, pre_run=[{"command": DEEP}, {"command": "truncate -s 1T sparse"}])
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
    freed = re.search(r"\(([\d.]+) MiB\)", done.stdout)
    assert freed is not None and float(freed.group(1)) < 100, done.stdout  # (said 1048576.x MiB)
    assert not first.exists() and second.is_dir()
    assert not [path.name for path in home.rglob("*.db-*")]  # every log folded into its database: the space is back
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
    subprocess.run(["rm", "-rf", str(runs)], check=True, timeout=120)  # (pytest's own removal recurses)


def test_a_prune_from_another_folder_removes_the_dagster_runs_of_a_run_started_with_a_relative_runs_dir(
    tmp_path: Path,
) -> None:
    """A run started as `--runs-dir runs` named its folder so in Dagster: a prune from elsewhere (cron) removed the
    folder and kept its Dagster runs for good."""
    task, home, _ = agentless_project(tmp_path / "project")
    for _ in range(2):
        done = coder_eval("run", task, "--runs-dir", "runs", home=home, cwd=tmp_path / "project")
        assert done.returncode == 0, done.stderr
    runs = tmp_path / "project" / "runs"
    first, second = run_folders(runs)
    started = json.loads((second / "run_plan.json").read_text())["started_at"]

    done = coder_eval("prune", "--before", started, "--runs-dir", runs, home=home, cwd=tmp_path)

    assert done.returncode == 0 and "pruned 1 run folder(s)" in done.stdout, done.stdout + done.stderr
    assert "and 1 Dagster run(s)" in done.stdout and not first.exists(), done.stdout
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert [r.tags.get("coder_eval/run") for r in instance.get_runs()] == [str(second)]


def test_a_dagster_run_whose_folder_stays_is_kept(tmp_path: Path) -> None:
    """A folder is judged by its run's start and a Dagster run by its creation (a backfill's runs are created
    before its folder's run starts): a run is deleted only with its folder."""
    from coder_eval_dagster.prune_cli import old_runs

    task, home, runs = agentless_project(tmp_path)
    assert coder_eval("run", task, "--runs-dir", runs, home=home).returncode == 0
    (folder,) = run_folders(runs)
    later = datetime.now(UTC) + timedelta(minutes=1)
    earlier = datetime.now(UTC) - timedelta(minutes=1)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert old_runs(instance, later, runs, kept={folder.name}, pruned=[]) == []
        assert len(old_runs(instance, later, runs, kept=set(), pruned=[folder])) == 1
        # a run of a folder pruned now goes with it, whenever it was created (a later resume, retry or rescore)
        assert len(old_runs(instance, earlier, runs, kept=set(), pruned=[folder])) == 1
        assert old_runs(instance, earlier, runs, kept=set(), pruned=[]) == []


def test_a_run_still_going_keeps_its_folder_and_its_dagster_run(tmp_path: Path) -> None:
    """A run that is no longer the newest but still going (another run started after it) is not pruned: its
    folder pulled from under it made it record false failures into the tables."""
    task, home, runs = agentless_project(tmp_path)
    slow = write_task(
        tmp_path / "slow",
        task_with(
            agent={"type": "none"},
            initial_prompt=None,
            sandbox={"python": None},
            pre_run=[{"command": "sleep 300"}],  # stopped once pruned (ended by the test)
            success_criteria=[criterion("run_command", command="true")],
        ),
    )
    command = [str(CLI), "run", str(slow), "--runs-dir", str(runs)]
    going = subprocess.Popen(command, env={**os.environ, "DAGSTER_HOME": str(home)}, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list(runs.glob("*/run_plan.json")):
            assert time.monotonic() < deadline and going.poll() is None, "the slow run never planned"
            time.sleep(0.1)
        (slow_folder,) = run_folders(runs)
        assert coder_eval("run", task, "--runs-dir", runs, home=home).returncode == 0  # the newest run now

        done = coder_eval("prune", "--keep-days", "0", "--runs-dir", runs, home=home)
        assert done.returncode == 0, done.stderr
        assert "pruned 0 run folder(s)" in done.stdout and "and 1 Dagster run(s)" not in done.stdout
        assert slow_folder.is_dir() and going.poll() is None
        with dg.DagsterInstance.from_config(str(home)) as instance:
            assert str(slow_folder) in {r.tags.get("coder_eval/run") for r in instance.get_runs()}
    finally:
        going.terminate()
        going.wait(timeout=60)


def test_prune_of_one_runs_dir_keeps_the_dagster_runs_of_another(tmp_path: Path) -> None:
    """The default instance is shared by every runs dir used from one folder: pruning one leaves the others'."""
    task, home, runs = agentless_project(tmp_path)
    other = tmp_path / "other-runs"
    assert coder_eval("run", task, "--runs-dir", other, home=home).returncode == 0
    for _ in range(2):
        assert coder_eval("run", task, "--runs-dir", runs, home=home).returncode == 0
    (other_folder,), (old, newest) = run_folders(other), run_folders(runs)

    done = coder_eval("prune", "--keep-days", "0", "--runs-dir", runs, home=home)
    assert done.returncode == 0, done.stderr
    assert "pruned 1 run folder(s)" in done.stdout and "and 1 Dagster run(s)" in done.stdout
    assert not old.exists() and newest.is_dir() and other_folder.is_dir()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert sorted(r.tags["coder_eval/run"] for r in instance.get_runs()) == sorted([str(other_folder), str(newest)])


def test_a_copied_runs_folder_whose_latest_is_a_folder(tmp_path: Path) -> None:
    """``cp -rL`` makes ``latest`` a folder: a run there leaves it (one warning naming it, no temporary link left),
    and prune keeps the newest run and never takes ``latest`` for a run of its own."""
    task, home, runs = agentless_project(tmp_path)
    assert coder_eval("run", task, "--runs-dir", runs, home=home).returncode == 0
    copy = tmp_path / "copy"
    shutil.copytree(runs, copy, symlinks=False)  # as cp -rL: latest is a folder now

    again = coder_eval("run", task, "--runs-dir", copy, home=home)
    assert again.returncode == 0, again.stderr
    (warning,) = [line for line in again.stderr.splitlines() if "latest" in line]
    assert warning.startswith(f"warning: {copy / 'latest'} is not a link") and ".tmp" not in warning
    assert not list(copy.glob(".latest*")) and (copy / "latest").is_dir() and not (copy / "latest").is_symlink()
    old, newest = [folder for folder in run_folders(copy) if folder.name != "latest"]

    done = coder_eval("prune", "--keep-days", "0", "--runs-dir", copy, home=home)
    assert done.returncode == 0, done.stderr
    assert "pruned 1 run folder(s)" in done.stdout
    assert not old.exists() and newest.is_dir() and (copy / "latest" / "run_plan.json").is_file()


def test_a_copied_home_says_it_uses_the_original_instance(tmp_path: Path) -> None:
    """The dagster.yaml coder-eval writes holds the home's absolute paths (Dagster's config cannot name a folder
    under DAGSTER_HOME): a copied or moved home opens the original's databases, and each command says so."""
    home = tmp_path / "home"
    assert coder_eval("instance", "init", home, home=home).returncode == 0
    (tmp_path / "runs").mkdir()  # a runs folder that is not there is refused (a mistyped one would prune nothing)
    fresh = coder_eval("prune", "--keep-days", "0", "--runs-dir", tmp_path / "runs", home=home)
    assert fresh.returncode == 0 and fresh.stderr == ""
    copy = tmp_path / "copy"
    shutil.copytree(home, copy)

    moved = coder_eval("prune", "--keep-days", "0", "--runs-dir", tmp_path / "runs", home=copy)
    assert moved.returncode == 0
    assert moved.stderr.startswith(f"warning: {copy / 'dagster.yaml'} stores the instance in {home / 'history'}")
    assert len(moved.stderr.splitlines()) == 1


def test_a_pruned_experiment_run_is_compared_against_its_first_variant(tmp_path: Path) -> None:
    """compare reads a pruned run from its tables: its baseline is still the experiment's first variant (kept in
    the table file), not the first name in sorted order."""
    task, home, runs = agentless_project(tmp_path)
    experiment = tmp_path / "ab.yaml"
    experiment.write_text(
        "experiment_id: ab\ntasks: [tasks/task.yaml]\nvariants:\n  - variant_id: zeta\n  - variant_id: alpha\n"
    )
    assert coder_eval("run", "-e", experiment, "--runs-dir", runs, home=home).returncode == 0
    assert coder_eval("run", task, "--runs-dir", runs, home=home).returncode == 0  # the newest run is kept
    run_dir, newest = run_folders(runs)
    before = coder_eval("compare", run_dir, home=home)
    cutoff = json.loads((newest / "run_plan.json").read_text())["started_at"]
    assert coder_eval("prune", "--before", cutoff, "--runs-dir", runs, home=home).returncode == 0
    assert not run_dir.exists()
    after = coder_eval("compare", run_dir, home=home)
    assert "alpha vs zeta" in before.stdout, before.stdout + before.stderr
    assert after.stdout == before.stdout, after.stdout + after.stderr
    # its page wants a folder to go in: the pruned run's place is not remade (no prune would remove it)
    paged = coder_eval("compare", run_dir, "--format", "html", home=home)
    assert paged.returncode == 2 and "give -o FILE" in paged.stderr, paged.stderr
    assert not run_dir.exists()
    to_file = coder_eval("compare", run_dir, "--format", "html", "-o", tmp_path / "ab.html", home=home)
    assert to_file.returncode == 0 and (tmp_path / "ab.html").is_file(), to_file.stderr


def test_a_partition_whose_materializations_were_all_pruned_shows_as_not_materialized(tmp_path: Path) -> None:
    """The UI's partition counts are cached from the events; prune deleted the events and the cache still counted
    the pruned partitions as materialized (the sensor, reading the events, saw them as never evaluated)."""
    from dagster._core.storage.partition_status_cache import get_and_update_asset_status_cache_value

    from coder_eval_dagster.defs.partitions import row_task_partitions

    task, home, runs = agentless_project(tmp_path, dataset={"rows": [{"id": "r1"}, {"id": "r2"}]})
    for row in ("r1", "r2"):
        done = coder_eval("run", task, "--task", f"t1/{row}", "--runs-dir", runs, home=home)
        assert done.returncode == 0, done.stderr

    def materialized() -> list[str]:
        """What the asset's partitions page counts as materialized."""
        with dg.DagsterInstance.from_config(str(home)) as instance:
            status = get_and_update_asset_status_cache_value(
                instance, dg.AssetKey("criteria_scores"), row_task_partitions
            )
            assert status is not None
            subset = status.deserialize_materialized_partition_subsets(row_task_partitions)
            return sorted(subset.get_partition_keys())

    assert materialized() == ["t1/r1|default", "t1/r2|default"]
    second = run_folders(runs)[1]
    second_started = json.loads((second / "run_plan.json").read_text())["started_at"]
    pruned = coder_eval("prune", "--before", second_started, "--runs-dir", runs, home=home)
    assert pruned.returncode == 0 and "and 1 Dagster run(s)" in pruned.stdout, pruned.stdout + pruned.stderr
    assert materialized() == ["t1/r2|default"]


def test_a_mistyped_dagster_home_prunes_nothing(tmp_path: Path) -> None:
    """It made a new, empty instance there and removed the run folders, leaving their Dagster runs in the real one."""
    task, home, runs = agentless_project(tmp_path)
    for _ in range(2):
        assert coder_eval("run", task, "--runs-dir", runs, home=home).returncode == 0
    folder = run_folders(runs)[0]  # the older one: not the latest, which prune always keeps
    mistyped = tmp_path / "hmoe"
    refused = coder_eval("prune", "--keep-days", "0", "--runs-dir", runs, home=mistyped)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.startswith(f"coder-eval prune: {mistyped} holds no Dagster instance (no dagster.yaml")
    assert folder.is_dir() and not mistyped.exists()


def test_the_folder_of_a_launched_run_that_failed_before_its_plan_is_pruned(tmp_path: Path) -> None:
    """Its lock alone: no plan dated it, and prune never listed it."""
    task, home, runs = agentless_project(tmp_path)
    assert coder_eval("run", task, "--runs-dir", runs, home=home).returncode == 0
    failed, other = runs / "2026-01-01T00-00-00Z-0badc0de", runs / "not-a-run"  # (a folder of the user's stays)
    for folder in (failed, other):
        folder.mkdir()
        (folder / ".open.lock").touch()
        os.utime(folder, (0, time.time() - 3600))
    dry = coder_eval("prune", "--keep-days", "0", "--runs-dir", runs, "--dry-run", home=home)
    assert f"  {failed}\n" in dry.stdout, dry.stdout
    done = coder_eval("prune", "--keep-days", "0", "--runs-dir", runs, home=home)
    assert done.returncode == 0 and "pruned 1 run folder(s)" in done.stdout, done.stdout + done.stderr
    assert not failed.exists() and other.is_dir()
    assert (runs / "latest" / "run.json").is_file()  # the run itself: the newest, kept
