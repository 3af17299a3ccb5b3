"""`coder-eval dev` (webserver and daemon) with the key only in its own environment: a claude-code backfill
launched through GraphQL, as from the UI, runs in the daemon's run worker with the key and leaves it nowhere."""

from __future__ import annotations

import signal
import time
import urllib.request
from pathlib import Path

import dagster as dg
import pytest

from ..support.dagster_services import BACKFILL_STATUS, DagsterServices, free_port, launch_backfill
from .conftest import (
    SystemCli,
    agent_usage,
    anthropic_environment,
    carried,
    claude_code_task,
    new_key,
    no_key_anywhere,
    only_run,
    probe_ran,
    probing_session,
    stop_group,
)

pytestmark = pytest.mark.slow
ASSETS = ["resolved_tasks", "sandbox_runs", "criteria_scores"]  # the partitioned assets: one run
ENDED = ("SUCCESS", "FAILURE", "CANCELED")
LOCATIONS = (
    "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus locationOrLoadError { __typename } } } } }"
)


class DevServer:
    """The webserver `coder-eval dev` serves, as launch_backfill uses one: GraphQL on a port."""

    graphql = DagsterServices.graphql

    def __init__(self, port: int):
        self.port = port

    def wait_until_loaded(self, log: Path, timeout: float = 150) -> None:
        """Until the webserver answers and its code location is loaded (the log says why when it never is)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/server_info", timeout=2)
                entries = self.graphql(LOCATIONS)["workspaceOrError"]["locationEntries"]
                if entries and all(entry["loadStatus"] == "LOADED" for entry in entries):
                    assert all(e["locationOrLoadError"]["__typename"] == "RepositoryLocation" for e in entries), entries
                    return
            except OSError:
                pass
            time.sleep(1)
        pytest.fail(f"coder-eval dev did not serve a loaded code location in {timeout:g} s:\n{log.read_text()[-3000:]}")

    def runs_of(self, backfill_id: str, timeout: float = 180) -> list[dict[str, str]]:
        """The backfill's runs once each has ended (not waiting for the daemon's next pass to mark it completed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            backfill = self.graphql(BACKFILL_STATUS, {"id": backfill_id})["partitionBackfillOrError"]
            runs = backfill.get("runs") or []
            if runs and all(run["status"] in ENDED for run in runs):
                return runs
            time.sleep(1)
        pytest.fail(f"backfill {backfill_id} had runs still going after {timeout:g} s: {backfill}")


def test_a_backfill_launched_from_the_ui_runs_claude_code_with_the_key_of_dev_alone(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    key = new_key()
    fake = scripted_anthropic(probing_session())
    tasks = tmp_path / "tasks"
    claude_code_task(tasks, "ui", pre_run=[{"command": "env > pre_env.txt"}])
    # dagster dev reads ./.env into its processes itself: what coder-eval leaves out of it reached sandbox commands
    (tmp_path / ".env").write_text("MY_SETTING=dotenv-value-123\n")
    registered = system_cli("register", tasks, env={})  # no key: registering calls no model
    assert registered.code == 0 and "registered 1 row-task(s) x 1 variant(s)" in registered.out, registered.output

    port, log = free_port(), tmp_path / "dev.log"
    settings = {"CODER_EVAL_TASK_PATHS": str(tasks), "CODER_EVAL_RUNS_DIR": str(system_cli.runs)}
    with log.open("wb") as sink:
        address = ("-h", "127.0.0.1", "-p", str(port))  # dagster dev's own options
        dev = system_cli.start("dev", *address, env={**anthropic_environment(fake.url, key), **settings}, stdout=sink)
    try:
        server = DevServer(port)
        server.wait_until_loaded(log)
        runs = server.runs_of(launch_backfill(server, ASSETS))
    finally:
        stop_group(dev, first=signal.SIGINT)  # as Ctrl-C: dagster dev stops its webserver, daemon, code server

    assert [run["status"] for run in runs] == ["SUCCESS"], (runs, log.read_text()[-3000:])  # one run: one partition
    assert len(fake.script.agent_requests()) == 3, fake.script.paths
    assert fake.script.paths and all(path.startswith("/v1/messages") for path in fake.script.paths), fake.script.paths
    assert carried(key, fake.script.headers)  # from the run worker the daemon started
    run = only_run(system_cli.runs)
    result = run.result("ui")
    assert result["final_status"] == "SUCCESS", (result["error_message"], result["success_criteria_results"])
    tokens_in, tokens_out, cost = agent_usage(result)
    assert (tokens_in, tokens_out) == (1200, 80) and cost > 0
    probe_ran(run.evaluation("ui") / "sandbox")
    seen = (run.evaluation("ui") / "sandbox" / "pre_env.txt").read_text()
    assert "PATH=" in seen and "dotenv-value-123" not in seen and "MY_SETTING" not in seen
    no_key_anywhere(key, system_cli.runs, system_cli.home, output=log.read_text(errors="replace"))
    # the launched run names its folder, as a CLI run does: `prune` finds it wherever and with whatever settings
    with dg.DagsterInstance.from_config(str(system_cli.home)) as instance:
        (launched,) = [r for r in instance.get_runs() if r.tags.get("dagster/backfill")]
        assert launched.tags.get("coder_eval/run") == str(run.path.absolute())
        # and the process that ran it, so that a later one marks it failed had it died (fail_orphaned_runs)
        assert {"coder_eval/pid", "coder_eval/host", "coder_eval/pid_namespace"} <= set(launched.tags)


def test_a_backfill_launched_without_the_key_fails_its_sandbox_step_naming_it(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """No key in dev's environment: every evaluation was made and ended ERROR while the runs showed SUCCESS (a
    nightly schedule on a daemon whose key expired went green every night). The CLI refuses such a run."""
    tasks = tmp_path / "tasks"
    claude_code_task(tasks, "ui")
    assert system_cli("register", tasks, env={}).code == 0
    port, log = free_port(), tmp_path / "dev.log"
    settings = {"CODER_EVAL_TASK_PATHS": str(tasks), "CODER_EVAL_RUNS_DIR": str(system_cli.runs)}
    with log.open("wb") as sink:
        dev = system_cli.start("dev", "-h", "127.0.0.1", "-p", str(port), env=settings, stdout=sink)
    try:
        server = DevServer(port)
        server.wait_until_loaded(log)
        runs = server.runs_of(launch_backfill(server, ASSETS))
    finally:
        stop_group(dev, first=signal.SIGINT)

    assert [run["status"] for run in runs] == ["FAILURE"], runs
    with dg.DagsterInstance.from_config(str(system_cli.home)) as instance:
        failures = [
            str(event.dagster_event.step_failure_data.error)
            for event in instance.all_logs(runs[0]["runId"], of_type=dg.DagsterEventType.STEP_FAILURE)
            if event.dagster_event is not None and event.dagster_event.step_failure_data is not None
        ]
    assert any(
        "ANTHROPIC_API_KEY" in failure and "the claude-code agent of ui needs it" in failure for failure in failures
    ), failures
    assert not list(system_cli.runs.glob("**/sandbox")), "a sandbox was made"
