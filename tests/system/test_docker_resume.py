"""A docker run killed in its scoring step, then `coder-eval run --resume`d through the installed CLI.

The resumed evaluations reuse the containers the killed process made (its
checkpoint kept their sandbox phase), while one evaluation's container is
replaced: scoring a task that stages its own folder ends every process of the
container first, its keeper included, so the next command starts a new one.
That new container's start sweeps orphaned containers: it once took the
killed process's, which the other evaluations were running commands in, for
orphans and removed them under those commands (the engine's 404 / 409 "is not
running"), and the replaced container's egress relay was left unserved (the
listener stayed on the removed container's socket).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ..support.fake_http import LoopbackServer, RecordingHandler
from ..support.helpers import write_task
from .conftest import RunFolder, SystemCli, only_run, stop_group

pytestmark = pytest.mark.slow

GREETING = "hello-from-the-host"
REUSERS = ("a-reuses", "b-reuses")  # in their reused containers while the other's is replaced
REPLACER = "z-replaces"  # last in the run's order: not yet scored when the first run is killed


class _Greeting(RecordingHandler):
    def do_GET(self) -> None:
        self.script.paths.append(self.path)
        self.send(200, GREETING.encode(), "text/plain")


class HostService(LoopbackServer):
    """A service on the host's loopback that the tasks allow (``sandbox.network.allow``): reached by the relay."""

    handler = _Greeting


def _task(folder: Path, task_id: str, first: str, expected: str, port: int) -> Path:
    """A docker task under a confined network: ``first``'s stdout must be ``expected``, then the host service
    must answer through the egress relay."""
    fetch = f"python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/').read().decode())\""
    data: dict[str, Any] = {
        "task_id": task_id,
        "description": task_id,
        "agent": {"type": "none"},
        "sandbox": {"driver": "docker", "python": None, "network": {"allow": [f"127.0.0.1:{port}"]}},
        "pre_run": [{"command": "echo a > a.txt"}],
        "success_criteria": [
            {"type": "run_command", "command": first, "expected_stdout": expected, "description": "first"},
            {"type": "run_command", "command": fetch, "expected_stdout": GREETING, "description": "egress"},
        ],
    }
    return write_task(folder, data, f"{task_id}.yaml")


def _wait_for_checkpoints(runs: Path, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(list(runs.glob("20*/default/*/00/run_state.json"))) < count:
        assert time.monotonic() < deadline, "the sandbox phases never finished"
        time.sleep(0.1)


def _containers_under(folder: Path) -> list[str]:
    import docker

    found = docker.from_env(timeout=60).api.containers(all=True, filters={"label": "coder-eval"})
    return [c["Id"] for c in found if c["Labels"].get("coder-eval.folder", "").startswith(str(folder))]


@pytest.fixture
def no_container_left(tmp_path: Path, docker_image: str) -> Any:
    """Remove the test's containers whatever happened (a killed run leaves its own behind)."""
    yield
    import docker

    engine = docker.from_env(timeout=60)
    for container in _containers_under(tmp_path):
        engine.api.remove_container(container, force=True)


def _killed_in_scoring(cli: SystemCli, tasks: Path) -> RunFolder:
    """The first run, killed (-9, its process group) while the first evaluation's criteria run: every sandbox
    phase is checkpointed, and one evaluation at a time is scored, so the replacer is not reached."""
    options = ("--runs-dir", cli.runs, "-j", "1", "--judge-concurrency", "1")
    with (cli.folder / "first-run.log").open("wb") as log:
        process = cli.start("run", tasks, *options, env={}, stdout=log)
    try:
        _wait_for_checkpoints(cli.runs, 3)
        time.sleep(2)
    finally:
        stop_group(process, signal.SIGKILL)
    return only_run(cli.runs)


def test_a_resumed_run_keeps_the_containers_it_reuses_and_relays_the_egress_of_a_replaced_one(
    tmp_path: Path, system_cli: SystemCli, no_container_left: None
) -> None:
    with HostService(SimpleNamespace(paths=[])) as url:
        port = int(url.rsplit(":", 1)[1])
        tasks = tmp_path / "tasks"
        for task_id in REUSERS:
            _task(tasks, task_id, "sleep 8; echo ok", "ok", port)
        _task(tasks, REPLACER, 'test -d "$TASK_DIR" && echo staged', "staged", port)

        run = _killed_in_scoring(system_cli, tasks)
        for task_id in (*REUSERS, REPLACER):  # the killed process's containers, to be reused
            assert (run.evaluation(task_id) / "container.json").is_file(), task_id
        assert not (run.evaluation(REPLACER) / "task.json").exists(), "scored before the kill: nothing to replace"

        outcome = system_cli("run", "--resume", run.path, "-j", "3", env={}, timeout=180)

    for task_id in (*REUSERS, REPLACER):
        result = run.result(task_id)
        criteria = [(c["description"], c["error"], c["evidence"]) for c in result["success_criteria_results"]]
        assert result["final_status"] == "SUCCESS", (task_id, criteria, outcome.output)
    assert outcome.code == 0, outcome.output
    assert not _containers_under(tmp_path)  # each evaluation removed its container at its end
