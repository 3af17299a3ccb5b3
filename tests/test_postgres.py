"""The documented PostgreSQL configuration, against a real PostgreSQL server started by the test."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import dagster as dg
import pytest

from .dagster_services import free_port
from .helpers import run_cli, task_with, write, write_task

pytestmark = pytest.mark.slow
BINARIES = sorted(glob.glob("/usr/lib/postgresql/*/bin"))


def _as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: drop to the postgres user when we are root."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@pytest.fixture(scope="module")
def postgres_url():
    if not BINARIES:
        pytest.fail("PostgreSQL server binaries missing: .ci/run installs Debian's postgresql package")
    bin_dir = Path(BINARIES[-1])
    # not under pytest's tmp folders: they are root-only, and the server runs as postgres
    folder = Path(tempfile.mkdtemp(prefix="coder-eval-pg-"))
    data = folder / "data"
    data.mkdir()
    if os.geteuid() == 0:
        for path in (folder, data):
            shutil.chown(path, "postgres", "postgres")
    port = free_port()
    subprocess.run(
        _as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]),
        check=True,
        capture_output=True,
        timeout=120,
    )
    options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1"
    subprocess.run(
        _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(data / "log"), "-w", "start"]),
        check=True,
        capture_output=True,
        timeout=120,
    )
    try:
        # SQLAlchemy 2.1 defaults to psycopg 3; dagster-postgres needs psycopg2 (its NOTIFY is interpolated client-side)
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(folder, ignore_errors=True)


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
    (run_dir,) = [p for p in (tmp_path / "runs").iterdir() if p.name != "tables"]
    document = json.loads((run_dir / "run.json").read_text())
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        run = instance.get_run_by_id(document["dagster_run_id"])
        assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS
        assert len(instance.get_materialized_partitions(dg.AssetKey("criteria_scores"))) == 2
        assert instance.get_dynamic_partitions("task") == ["pg/a", "pg/b"]
