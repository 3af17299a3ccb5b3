"""The documented PostgreSQL configuration, against a real PostgreSQL server started by the test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from ..support.helpers import run_cli, run_folders, task_with, write, write_task
from ..support.postgres_server import running_postgres

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    with running_postgres() as url:
        yield url


def test_graph_runs_on_postgres_storage(tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    write(
        home / "dagster.yaml",
        f"""
        storage:
          postgres:
            postgres_url: "{postgres_url}"
        """,
    )
    agentless = {"agent": {"type": "none"}, "initial_prompt": None, "sandbox": {"python": None}}
    write_task(
        tmp_path / "tasks",
        task_with(
            task_id="pg",
            dataset={"rows": [{"id": "a"}, {"id": "b"}]},
            success_criteria=[{"type": "run_command", "command": "true", "description": "runs"}],
            **agentless,
        ),
    )
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    result = run_cli("run", tmp_path / "tasks", "--runs-dir", tmp_path / "runs")
    assert result.code == 0, result.err + result.out
    (run_dir,) = run_folders(tmp_path / "runs")
    document = json.loads((run_dir / "run.json").read_text())
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        run = instance.get_run_by_id(document["dagster_run_id"])
        assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS
        assert len(instance.get_materialized_partitions(dg.AssetKey("criteria_scores"))) == 2
        assert instance.get_dynamic_partitions("task") == ["pg/a", "pg/b"]
