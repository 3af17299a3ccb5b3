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

from .dagster_services import free_port
from .helpers import run_cli

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parent.parent


def test_dev_serves_the_cli_instance_and_shows_a_cli_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    assert run_cli("run", ROOT / "tasks/agentless_smoke_test.yaml", "--runs-dir", tmp_path / "runs").code == 0
    port = free_port()
    log = (tmp_path / "dev.log").open("wb")
    dev = subprocess.Popen(
        [str(Path(sys.executable).parent / "coder-eval"), "dev", "-h", "127.0.0.1", "-p", str(port)],
        env={**os.environ, "DAGSTER_HOME": str(home), "CODER_EVAL_TASK_PATHS": str(ROOT / "tasks")},
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
    finally:
        os.killpg(dev.pid, signal.SIGINT)  # as Ctrl-C in a terminal: dagster dev stops its children
        try:
            dev.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(dev.pid, signal.SIGKILL)
            dev.wait(timeout=10)


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
    listed = run_cli("list", ROOT / "tasks").out.splitlines()
    result = run_cli("register", ROOT / "tasks")
    assert result.code == 0 and f"registered {len(listed)} row-task(s) x 1 variant(s)" in result.out
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        assert "arithmetic_dataset/add-1" in instance.get_dynamic_partitions("task")
        assert instance.get_dynamic_partitions("variant") == ["default"]
        assert instance.get_runs() == []
