"""The Docker-host deployment for real: PostgreSQL, a gRPC code server, dagster-webserver and dagster-daemon on
the host, and DockerRunLauncher starting each chunk run in its own container of the code image (host network)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from coder_eval_dagster.code_image import DEFAULT_TAG, build_code_image

from .dagster_services import BIN, ROOT, DagsterServices, free_port, launch_backfill, wait_for_backfill
from .docker_engine import ensure_engine_and_image
from .helpers import criterion, task_with, write_task
from .test_postgres import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server)

pytestmark = pytest.mark.slow
SHIPPED = ROOT / "deploy" / "docker" / "dagster.yaml"
SHIPPED_ROOT = "/srv/coder-eval"
ROWS = 40
PER_RUN = 10
CODE_SERVER_START_S = 120


@pytest.fixture(scope="module")
def code_image() -> str:
    ensure_engine_and_image()  # the engine, and the debian-local base the code image is built on
    build_code_image(DEFAULT_TAG, say=lambda _: None)
    return DEFAULT_TAG


@contextmanager
def code_server(port: int, env: dict[str, str], log: Path) -> Iterator[None]:
    """`dagster code-server start` on 127.0.0.1, stopped with its process group."""
    command = [str(BIN / "dagster"), "code-server", "start", "-h", "127.0.0.1", "-p", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "-m", "coder_eval_dagster.definitions"], env=env, stdout=out, stderr=out, start_new_session=True
        )
    try:
        health = [str(BIN / "dagster"), "api", "grpc-health-check", "-p", str(port), "--host", "127.0.0.1"]
        deadline = time.monotonic() + CODE_SERVER_START_S
        while subprocess.run(health, env=env, capture_output=True, timeout=30).returncode != 0:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"the code server did not start; see {log}")
            time.sleep(1)
        yield
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def _deployment(root: Path, postgres: str, image: str) -> tuple[Path, Path, dict[str, str]]:
    """The shipped dagster.yaml with its shared folder moved under ``root``; the workspace; the environment."""
    home = root / "home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(SHIPPED.read_text().replace(SHIPPED_ROOT, str(root)))
    port = free_port()
    workspace = root / "workspace.yaml"
    workspace.write_text(
        f"load_from:\n  - grpc_server:\n      host: 127.0.0.1\n      port: {port}\n      location_name: coder_eval\n"
    )
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "DAGSTER_POSTGRES_URL": postgres,
        "CODER_EVAL_CODE_IMAGE": image,
        "CODER_EVAL_TASK_PATHS": str(root / "tasks"),
        "CODER_EVAL_RUNS_DIR": str(root / "runs"),
        "CODER_EVAL_CONCURRENCY": str(PER_RUN),
        "CODER_EVAL_PARTITIONS_PER_RUN": str(PER_RUN),
        "DAGSTER_EVENT_BATCH_SIZE": "1000",
        "ANTHROPIC_API_KEY": "",
        "OPENAI_API_KEY": "",
        "CODE_SERVER_PORT": str(port),
    }
    return home, workspace, env


def _failures(instance: dg.DagsterInstance, runs: list[dg.DagsterRun]) -> list[str]:
    """What went wrong in the failed runs, from their events (the run containers are gone by then)."""
    return [
        f"{run.run_id[:8]} {record.event_log_entry.dagster_event.step_failure_data.error.message}"
        for run in runs
        if run.status != dg.DagsterRunStatus.SUCCESS
        for record in instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE).records
    ]


def _tails(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace")[-3000:] for p in (root / "logs").iterdir())


def _remove_containers(run_ids: list[str]) -> None:
    """DockerRunLauncher never removes its containers: the test does (an engine gone leaves nothing to remove)."""
    import docker

    try:
        engine = docker.from_env(timeout=30)
    except docker.errors.DockerException:
        return
    for run_id in run_ids:
        for container in engine.containers.list(all=True, filters={"label": f"dagster/run_id={run_id}"}):
            container.remove(force=True)


def test_backfill_spreads_over_run_containers(
    tmp_path: Path,
    postgres_url: str,  # noqa: F811
    code_image: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path
    write_task(
        root / "tasks",
        task_with(
            task_id="wide",
            agent={"type": "none"},
            initial_prompt=None,
            sandbox={"driver": "docker", "python": None},  # from inside the run container, through the socket
            dataset={"rows": [{"id": f"r{i:02d}"} for i in range(ROWS)]},
            success_criteria=[criterion("run_command", command="true")],
        ),
    )
    home, workspace, env = _deployment(root, postgres_url, code_image)
    for name in ("DAGSTER_POSTGRES_URL", "CODER_EVAL_CODE_IMAGE"):  # this process opens the instance too
        monkeypatch.setenv(name, env[name])
    keys = [f"wide/r{i:02d}" for i in range(ROWS)]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("task", keys)
        instance.add_dynamic_partitions("variant", ["default"])
    (root / "logs").mkdir()
    run_ids: list[str] = []
    try:
        with (
            code_server(int(env["CODE_SERVER_PORT"]), env, root / "logs" / "code-server.log"),
            DagsterServices(home, workspace, env, root / "logs") as services,
        ):
            backfill_id = launch_backfill(
                services, ["resolved_tasks", "sandbox_runs", "criteria_scores", "suite_metrics"]
            )
            backfill = wait_for_backfill(services, backfill_id, timeout=420)
            run_ids = [r["runId"] for r in backfill["runs"]]
        with dg.DagsterInstance.from_config(str(home)) as instance:
            runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
            assert backfill["status"] == "COMPLETED_SUCCESS", "\n".join(_failures(instance, runs))[:3000] or _tails(
                root
            )
            chunks = [r for r in runs if dg.AssetKey("criteria_scores") in (r.asset_selection or set())]
            summaries = [r for r in runs if dg.AssetKey("suite_metrics") in (r.asset_selection or set())]
            assert len(chunks) == ROWS // PER_RUN and len(summaries) == 1 and len(runs) == 5
            containers = {r.tags.get("docker/container_id") for r in runs}
            assert None not in containers and len(containers) == len(runs)  # each run in its own container
            materialized = instance.fetch_materializations(dg.AssetKey("suite_metrics"), limit=10).records
            assert len(materialized) == 1
        results = pd.read_parquet(root / "runs" / "tables" / "task_results")
        assert sorted(results["task_id"]) == keys and results["success"].all()  # each evaluation exactly once
    finally:
        _remove_containers(run_ids)
