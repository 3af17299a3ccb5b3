"""Real dagster-webserver and dagster-daemon processes for tests and benchmarks.

Started in their own process groups and stopped by pid (SIGTERM, then
SIGKILL for what is left: `dagster dev`-style children ignore SIGTERM).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent.parent


def prepare_instance(folder: Path) -> tuple[Path, Path]:
    """An instance home with coder-eval's defaults, and a workspace loading the code location."""
    from coder_eval_dagster.storage import INSTANCE_YAML

    home = folder / "home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(INSTANCE_YAML.format(base=home))
    workspace = folder / "workspace.yaml"
    workspace.write_text(
        "load_from:\n  - python_module:\n      module_name: coder_eval_dagster.definitions\n"
        f"      attribute: defs\n      working_directory: {ROOT}\n"
    )
    return home, workspace


def apply_partition_requests(instance: Any, result: Any) -> None:
    """Apply a SensorResult's dynamic partition requests, as the daemon does."""
    import dagster as dg

    for request in result.dynamic_partitions_requests:
        if isinstance(request, dg.DeleteDynamicPartitionsRequest):
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)
        else:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class DagsterServices:
    """``with DagsterServices(home, workspace, env) as graphql:`` — a webserver and a daemon on one instance."""

    def __init__(self, home: Path, workspace: Path, env: dict[str, str], log_dir: Path, daemon: bool = True):
        self.home, self.workspace, self.log_dir, self.daemon = home, workspace, log_dir, daemon
        self.env = {**os.environ, **env, "DAGSTER_HOME": str(home)}
        self.port = free_port()
        self.processes: list[subprocess.Popen] = []

    def _start(self, name: str, *args: str) -> None:
        log = (self.log_dir / f"{name}.log").open("wb")
        self.processes.append(
            subprocess.Popen(
                [str(BIN / name), *args],
                env=self.env,
                stdout=log,
                stderr=log,
                cwd=self.workspace.parent,
                start_new_session=True,
            )
        )

    def __enter__(self) -> DagsterServices:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._start("dagster-webserver", "-w", str(self.workspace), "-h", "127.0.0.1", "-p", str(self.port))
        if self.daemon:
            self._start("dagster-daemon", "run", "-w", str(self.workspace))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/server_info", timeout=2)
                return self
            except OSError:
                time.sleep(0.5)
        self.__exit__()
        raise RuntimeError(f"dagster-webserver did not start; see {self.log_dir}")

    def __exit__(self, *exc: object) -> None:
        for process in self.processes:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    process.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/graphql", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        if answer.get("errors"):
            raise RuntimeError(answer["errors"])
        return answer["data"]


LAUNCH_BACKFILL = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message stack }
    ... on UnauthorizedError { message }
  }
}
"""

BACKFILL_STATUS = """
query Status($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { status runs(limit: 1000) { runId status } }
    ... on PythonError { message }
  }
}
"""


def launch_backfill(services: DagsterServices, assets: list[str]) -> str:
    params = {"assetSelection": [{"path": [name]} for name in assets], "allPartitions": True}
    result = services.graphql(LAUNCH_BACKFILL, {"params": params})["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise RuntimeError(result)
    return result["backfillId"]


def wait_for_backfill(services: DagsterServices, backfill_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        backfill = services.graphql(BACKFILL_STATUS, {"id": backfill_id})["partitionBackfillOrError"]
        if backfill.get("status") not in (None, "REQUESTED", "CANCELING"):
            return backfill
        time.sleep(1)
    raise TimeoutError(f"backfill {backfill_id} still running after {timeout:.0f} s")


def sensor_tick(instance: Any, settings: Any, cursor: str | None, repository: str | None = None) -> Any:
    """One tick as the daemon's code server evaluates it (Dagster's own checks of the result included),
    with its partition requests applied as the daemon applies them; of the sensor in ``repository`` (another
    code location's) when one is named."""
    import dagster as dg

    from coder_eval_dagster.definitions import build_definitions
    from coder_eval_dagster.defs.sensors import task_files_sensor

    context = dg.build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={"settings": settings},
        definitions=build_definitions(settings),
        repository_name=repository,
    )
    data = task_files_sensor.evaluate_tick(context)
    apply_partition_requests(instance, data)
    return data
