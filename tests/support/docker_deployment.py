"""The Docker-host deployment (deploy/docker) started for real, for tests and benchmarks.

PostgreSQL is the caller's; this starts the gRPC code server, dagster-webserver
and dagster-daemon on the host with the shipped dagster.yaml (its shared folder
moved under a temporary root), so DockerRunLauncher starts run containers of
the code image on the host network. Every run container is removed afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from .dagster_services import BIN, ROOT, DagsterServices, free_port

SHIPPED = ROOT / "deploy" / "docker" / "dagster.yaml"
MODEL_ROUTE_VARIABLES = (
    "API_BACKEND",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_REGION",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "CODEX_API_KEY",
    "CODEX_BASE_URL",
)
SHIPPED_ROOT = "/srv/coder-eval"
CODE_SERVER_START_S = 120
AGENT_POOL, POOL_LIMIT = "agent_api", 4
INSTANCE_ENV = ("DAGSTER_POSTGRES_URL", "CODER_EVAL_CODE_IMAGE")  # what opening the instance itself needs


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


def deployment_files(
    root: Path, postgres: str, image: str, per_run: int, concurrency: int
) -> tuple[Path, Path, dict[str, str]]:
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
        "CODER_EVAL_CONCURRENCY": str(concurrency),
        "CODER_EVAL_PARTITIONS_PER_RUN": str(per_run),
        "DAGSTER_EVENT_BATCH_SIZE": "1000",
        **dict.fromkeys(MODEL_ROUTE_VARIABLES, ""),  # the shipped env_vars list them: each must be set
        "CODE_SERVER_PORT": str(port),
    }
    return home, workspace, env


def remove_containers(run_ids: list[str]) -> None:
    """DockerRunLauncher never removes its containers: the test does (an engine gone leaves nothing to remove)."""
    import docker

    try:
        engine = docker.from_env(timeout=30)
    except docker.errors.DockerException:
        return
    for run_id in run_ids:
        for container in engine.containers.list(all=True, filters={"label": f"dagster/run_id={run_id}"}):
            container.remove(force=True)


@contextmanager
def deployed(
    root: Path, postgres: str, image: str, keys: list[str], per_run: int, concurrency: int
) -> Iterator[tuple[DagsterServices, dg.DagsterInstance]]:
    """The deployment serving the task files under root/tasks, with the task keys registered."""
    home, workspace, env = deployment_files(root, postgres, image, per_run, concurrency)
    saved = {name: os.environ.get(name) for name in INSTANCE_ENV}
    os.environ.update({name: env[name] for name in INSTANCE_ENV})
    (root / "logs").mkdir()
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            instance.add_dynamic_partitions("task", keys)
            instance.add_dynamic_partitions("variant", ["default"])
            # as docs/deploy.md says: the pool's row exists before runs start at once (else they race to create it)
            instance.event_log_storage.set_concurrency_slots(AGENT_POOL, POOL_LIMIT)
            try:
                with (
                    code_server(int(env["CODE_SERVER_PORT"]), env, root / "logs" / "code-server.log"),
                    DagsterServices(home, workspace, env, root / "logs") as services,
                ):
                    yield services, instance
            finally:
                remove_containers([run.run_id for run in instance.get_runs()])
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
