"""`coder-eval dev` serves the UI on the CLI's own instance; `coder-eval register` adds partitions without a run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dagster as dg
import pytest

from coder_eval_dagster.defs.partitions import partition_key

from ..support.dagster_services import free_port
from ..support.helpers import criterion, run_cli, task_with, write_task

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parent.parent.parent


def test_dev_serves_the_cli_instance_and_shows_a_cli_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    assert run_cli("run", ROOT / "tasks/agentless_smoke_test.yaml", "--runs-dir", tmp_path / "runs").code == 0
    port = free_port()
    log = (tmp_path / "dev.log").open("wb")
    dev = subprocess.Popen(
        [str(Path(sys.executable).parent / "coder-eval"), "dev", "-h", "127.0.0.1", "-p", str(port)],
        env={**unbatched(), "DAGSTER_HOME": str(home), "CODER_EVAL_TASK_PATHS": str(ROOT / "tasks")},
        stdout=log,
        stderr=log,
        cwd=tmp_path,
        start_new_session=True,  # dagster dev and its children: one group, stopped together
    )
    try:
        runs = _graphql(port, "{ runsOrError { ... on Runs { results { runId status } } } }", deadline=150)
        statuses = [r["status"] for r in runs["runsOrError"]["results"]]
        assert statuses == ["SUCCESS"]  # the CLI's run, on the same instance
        assert not list(tmp_path.glob(".tmp_dagster_home_*"))  # not a throwaway instance
        # its run workers store a step's events in batches, as the CLI's runs do (docs/operations.md)
        assert b"DAGSTER_EVENT_BATCH_SIZE=1000" in Path(f"/proc/{dev.pid}/environ").read_bytes().split(b"\0")
    finally:
        os.killpg(dev.pid, signal.SIGINT)  # as Ctrl-C in a terminal: dagster dev stops its children
        try:
            dev.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(dev.pid, signal.SIGKILL)
            dev.wait(timeout=10)


def unbatched() -> dict[str, str]:
    """This process's environment without the batch size an in-process CLI run set in it."""
    return {name: value for name, value in os.environ.items() if name != "DAGSTER_EVENT_BATCH_SIZE"}


def _graphql(port: int, query: str, deadline: float) -> dict:
    body = json.dumps({"query": query}).encode()
    until = time.monotonic() + deadline
    while True:
        try:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/graphql", data=body, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())["data"]
        except OSError:
            if time.monotonic() > until:
                raise
            time.sleep(1)


def test_register_adds_partitions_without_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    listed = [line.split(" ", 1) for line in run_cli("list", ROOT / "tasks").out.splitlines()]
    result = run_cli("register", ROOT / "tasks")
    assert result.code == 0 and f"registered {len(listed)} row-task(s) x 1 variant(s)" in result.out
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        assert "arithmetic_dataset/add-1" in instance.get_dynamic_partitions("task")
        assert instance.get_dynamic_partitions("variant") == ["default"]
        assert instance.get_runs() == []  # nothing ran
        event = instance.get_latest_materialization_event(dg.AssetKey("task_definitions"))
        assert event is not None and event.run_id == ""  # runless
        definitions = _latest(instance, "task_definitions")
        assert definitions.metadata["row_tasks"].value == len(listed)
        assert definitions.metadata["recorded_by"].value == "coder-eval register"
        resolved = instance.fetch_materializations(dg.AssetKey("resolved_tasks"), limit=1000).records
        assert {r.partition_key for r in resolved} == {str(partition_key(t, v)) for v, t in listed}
        assert all(r.asset_materialization.tags["dagster/data_version"] for r in resolved)  # type: ignore[union-attr]


def test_register_of_an_experiment_records_the_task_paths_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`register -e EXP` with no path: task_definitions said `task_paths` empty."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    smoke = ROOT / "tasks" / "agentless_smoke_test.yaml"
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(f"experiment_id: e\ntasks: ['{smoke}']\nvariants: [{{variant_id: a}}]\n")
    assert run_cli("register", "-e", experiment).code == 0
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        assert _latest(instance, "task_definitions").metadata["task_paths"].value == str(smoke)


def test_register_records_what_changed_and_keeps_a_runs_materializations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    passing = task_with(
        agent={"type": "none"}, initial_prompt=None, success_criteria=[criterion("run_command", command="true")]
    )
    task = write_task(tmp_path / "tasks", passing)

    def register() -> str:
        result = run_cli("register", task)
        assert result.code == 0, result.err
        return result.out.split("; ")[-1].strip()

    assert register() == "1 resolved_tasks partition(s) recorded as materialized"
    assert register() == "0 resolved_tasks partition(s) recorded as materialized"  # nothing changed
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        before = _latest(instance, "resolved_tasks").tags["dagster/data_version"]
    write_task(tmp_path / "tasks", {**passing, "description": "an edited task"})
    assert register() == "1 resolved_tasks partition(s) recorded as materialized"
    assert run_cli("run", task, "--runs-dir", tmp_path / "runs").code == 0  # a real run after register
    assert register() == "0 resolved_tasks partition(s) recorded as materialized"  # the run's events stay latest
    # a run of another selection (one file of a folder) records its own files' digest: the folder is unchanged all
    # the same, and registering it again records nothing (it recorded every partition again)
    other = write_task(tmp_path / "more", {**passing, "task_id": "other"})
    assert run_cli("run", other, "--runs-dir", tmp_path / "runs").code == 0
    assert register() == "0 resolved_tasks partition(s) recorded as materialized"
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        assert len(instance.get_runs()) == 2
        latest = instance.fetch_materializations(dg.AssetKey("resolved_tasks"), limit=4).records[1:]
        assert [r.run_id != "" for r in latest] == [True, False, False]  # (other's,) the run's, the two registers'
        assert latest[2].asset_materialization.tags["dagster/data_version"] == before  # type: ignore[union-attr]
        assert latest[1].asset_materialization.tags["dagster/data_version"] != before  # type: ignore[union-attr]
    # edited, then run: the run recorded the files as they are, so registering them records nothing either
    write_task(tmp_path / "tasks", {**passing, "description": "edited again"})
    assert run_cli("run", task, "--runs-dir", tmp_path / "runs").code == 0
    assert register() == "0 resolved_tasks partition(s) recorded as materialized"


def _latest(instance: dg.DagsterInstance, asset: str) -> dg.AssetMaterialization:
    event = instance.get_latest_materialization_event(dg.AssetKey(asset))
    assert event is not None and event.asset_materialization is not None
    return event.asset_materialization


def test_dev_help_makes_no_instance(tmp_path: Path) -> None:
    """``coder-eval dev --help`` with no DAGSTER_HOME left ``./.dagster`` behind just to print dagster dev's help."""
    environment = {name: value for name, value in os.environ.items() if name != "DAGSTER_HOME"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "coder-eval"), "dev", "--help"],
        env=environment,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "Usage: dagster dev" in done.stdout
    assert list(tmp_path.iterdir()) == []
