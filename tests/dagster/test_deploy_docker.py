"""The Docker-host deployment for real: PostgreSQL, a gRPC code server, dagster-webserver and dagster-daemon on
the host, and DockerRunLauncher starting each chunk run in its own container of the code image (host network)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from coder_eval_dagster.code_image import DEFAULT_TAG, build_code_image

from ..support.dagster_services import DagsterServices, launch_backfill, wait_for_backfill
from ..support.docker_deployment import deployed
from ..support.docker_engine import ensure_engine_and_image
from ..support.helpers import criterion, task_with, write_task
from ..support.postgres_server import running_postgres

# One worker runs the module (make test: --dist loadgroup): its tests share one code image build and one
# PostgreSQL, and two deployments launching run containers at once on two cores overran their deadlines.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("docker-deployment")]
ROWS = 40
PER_RUN = 10


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    with running_postgres() as url:
        yield url


@pytest.fixture(scope="module")
def code_image() -> str:
    ensure_engine_and_image()  # the engine, and the debian-local base the code image is built on
    build_code_image(DEFAULT_TAG, say=lambda _: None)
    return DEFAULT_TAG


def _failures(instance: dg.DagsterInstance, runs: list[dg.DagsterRun]) -> list[str]:
    """What went wrong in the failed runs, from their events (the run containers are gone by then)."""
    return [
        f"{run.run_id[:8]} {record.event_log_entry.message} {record.event_log_entry.dagster_event.event_specific_data}"
        for run in runs
        if run.status != dg.DagsterRunStatus.SUCCESS
        for kind in (
            dg.DagsterEventType.STEP_FAILURE,
            dg.DagsterEventType.RUN_FAILURE,
            dg.DagsterEventType.ENGINE_EVENT,
        )
        for record in instance.get_records_for_run(run.run_id, of_type=kind).records
    ]


def _tails(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace")[-3000:] for p in (root / "logs").iterdir())


KEYS = [f"wide/r{i:02d}" for i in range(ROWS)]
BACKFILLED = ["resolved_tasks", "sandbox_runs", "criteria_scores", "suite_metrics"]


@contextmanager
def deployment(
    root: Path, postgres: str, image: str, pre_run: list[dict[str, str]]
) -> Iterator[tuple[DagsterServices, dg.DagsterInstance]]:
    """The 40-row task (docker driver, from inside the run containers through the socket), deployed."""
    write_task(
        root / "tasks",
        task_with(
            task_id="wide",
            agent={"type": "none"},
            initial_prompt=None,
            sandbox={"driver": "docker", "python": None},
            dataset={"rows": [{"id": key.split("/")[1]} for key in KEYS]},
            pre_run=pre_run,
            success_criteria=[criterion("run_command", command="true")],
        ),
    )
    with deployed(root, postgres, image, KEYS, PER_RUN, PER_RUN) as running:
        yield running


def _backfill_runs(
    instance: dg.DagsterInstance, root: Path, backfill_id: str, backfill: dict[str, Any]
) -> list[dg.DagsterRun]:
    runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
    assert backfill["status"] == "COMPLETED_SUCCESS", "\n".join(_failures(instance, runs))[:3000] or _tails(root)
    return runs


def _selecting(runs: list[dg.DagsterRun], asset: str) -> list[dg.DagsterRun]:
    return [r for r in runs if dg.AssetKey(asset) in (r.asset_selection or set())]


def _assert_each_evaluation_once(root: Path, instance: dg.DagsterInstance, runs: list[dg.DagsterRun]) -> None:
    ours = {run.run_id for run in runs}  # the module's tests share one PostgreSQL database
    records = instance.fetch_materializations(dg.AssetKey("suite_metrics"), limit=10).records
    assert len([r for r in records if r.run_id in ours]) == 1
    results = pd.read_parquet(root / "runs" / "tables" / "task_results")
    assert sorted(results["task_id"]) == KEYS and results["success"].all()


def test_a_backfill_spreads_over_run_containers_and_retries_a_killed_one(
    tmp_path: Path,
    postgres_url: str,
    code_image: str,
) -> None:
    """One deployment for both (each costs minutes on two cores): the chunks, each in a container of its own, and
    the chunk whose container is killed mid-run retried by Dagster, every evaluation counted once."""
    import docker

    slow = [{"command": "sleep 6"}]  # every evaluation: a chunk is still running when its container is killed
    with deployment(tmp_path, postgres_url, code_image, slow) as (services, instance):
        backfill_id = launch_backfill(services, BACKFILLED)
        victim = _started_chunk(instance, backfill_id)
        docker.from_env(timeout=30).containers.get(victim.tags["docker/container_id"]).kill()
        backfill = wait_for_backfill(services, backfill_id, timeout=420)
        runs = _backfill_runs(instance, tmp_path, backfill_id, backfill)
        retries = [r for r in runs if r.tags.get("dagster/parent_run_id") == victim.run_id]
        assert instance.get_run_by_id(victim.run_id).status == dg.DagsterRunStatus.FAILURE  # type: ignore[union-attr]
        assert [r.status for r in retries] == [dg.DagsterRunStatus.SUCCESS]
        failed = [r for r in runs if r.status != dg.DagsterRunStatus.SUCCESS and r.run_id != victim.run_id]
        assert not failed, "\n".join(_failures(instance, failed))[:5000]
        assert len(_selecting(runs, "criteria_scores")) == ROWS // PER_RUN + 1  # the chunks and the retry
        assert len(_selecting(runs, "suite_metrics")) == 1 and len(runs) == ROWS // PER_RUN + 2
        containers = {r.tags.get("docker/container_id") for r in runs}
        assert None not in containers and len(containers) == len(runs)  # each run in its own container
        _assert_each_evaluation_once(tmp_path, instance, runs)


def _started_chunk(instance: dg.DagsterInstance, backfill_id: str) -> dg.DagsterRun:
    """A chunk run of the backfill whose container has been running its steps for a second."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        started = instance.get_runs(
            filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}, statuses=[dg.DagsterRunStatus.STARTED])
        )
        if started and "docker/container_id" in started[0].tags:
            time.sleep(1)
            return started[0]
        time.sleep(0.5)
    raise TimeoutError("no chunk run started within 180 s")
