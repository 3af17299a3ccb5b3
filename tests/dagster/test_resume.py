"""Crash and resume, retrying ERROR evaluations, and the JUnit report, with real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from ..support.helpers import run_cli, run_folders, write
from ..support.ledger import Ledger

pytestmark = pytest.mark.slow
CLI = Path(sys.executable).parent / "coder-eval"


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    """What ran, across runs: the tasks' commands report to it (they cannot write the host's files)."""
    served = Ledger()
    yield served
    served.close()


def _task(folder: Path, task_id: str, pre_run: str, ledger: Ledger) -> None:
    sandbox = {"python": None, "network": ledger.network}
    write(
        folder / f"{task_id}.yaml",
        f"""
        task_id: {task_id}
        description: {task_id}
        agent: {{type: none}}
        sandbox: {json.dumps(sandbox)}
        pre_run: [{{command: {json.dumps(pre_run)}, timeout: 60}}]
        success_criteria: [{{type: run_command, command: "true", description: t}}]
        """,
    )


def _only_run(runs: Path) -> Path:
    (run_dir,) = run_folders(runs)
    return run_dir


def test_a_killed_run_resumes_without_rerunning_what_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ledger: Ledger
) -> None:
    names = [f"t{i}" for i in range(6)]
    for name in names:
        _task(tmp_path / "tasks", name, f"{ledger.report(name)}; sleep 0.6", ledger)
    home, runs = tmp_path / "home", tmp_path / "runs"
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    command = [str(CLI), "run", str(tmp_path / "tasks"), "--runs-dir", str(runs), "--concurrency", "1"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list(runs.glob("latest/default/*/00/run_state.json"))) < 2:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    run_dir = _only_run(runs)
    finished_before = {p.parent.parent.name for p in run_dir.glob("default/*/00/run_state.json")}
    assert 2 <= len(finished_before) < len(names)

    assert run_cli("rescore", run_dir).code == 2  # incomplete: it points to --resume

    monkeypatch.setenv("DAGSTER_HOME", str(home))
    resumed = run_cli("run", "--resume", run_dir, "--concurrency", "2")
    assert resumed.code == 0, resumed.err + resumed.out
    counts = {name: ledger.names.count(name) for name in names}
    assert all(counts[name] == 1 for name in finished_before), counts  # never run twice
    assert all(counts[name] in (1, 2) for name in names)  # the one cut short ran again
    document = json.loads((run_dir / "run.json").read_text())
    assert sorted(t["task_id"] for t in document["task_results"]) == names and document["passed"]
    results = pd.read_parquet(runs / "tables" / "task_results")
    assert sorted(results["task_id"]) == names  # each evaluation exactly once
    with dg.DagsterInstance.from_config(str(home)) as instance:
        killed, finished = reversed(instance.get_runs())  # newest first
        assert killed.status == dg.DagsterRunStatus.FAILURE  # marked when the resume started
        assert finished.status == dg.DagsterRunStatus.SUCCESS


def test_retry_errors_reruns_only_the_errors_and_junit_reports_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ledger: Ledger
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    _task(tmp_path / "tasks", "flaky", f"{ledger.report('flaky')}; curl -sf {ledger.url}/once-flaky || exit 3", ledger)
    _task(tmp_path / "tasks", "steady", ledger.report("steady"), ledger)
    write(
        tmp_path / "tasks/failing.yaml",
        """
        task_id: failing
        description: failing
        agent: {type: none}
        sandbox: {python: null}
        success_criteria: [{type: file_exists, path: nowhere.txt, description: "a file that is never made"}]
        """,
    )
    junit = tmp_path / "report.xml"
    first = run_cli("run", tmp_path / "tasks", "--runs-dir", tmp_path / "runs", "--junit", junit)
    assert first.code == 1
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuites" and suite.get("tests") == "3" and suite.get("errors") == "1"
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"flaky[00]", "steady[00]", "failing[00]"}  # coder_eval's names: <task_id>[NN]
    assert cases["flaky[00]"].find("error") is not None and "pre_run" in cases["flaky[00]"].find("error").get("message")
    failure = cases["failing[00]"].find("failure")
    assert failure is not None and failure.get("message") == "FAILURE"
    assert "[FAIL] file_exists: score 0.00 < threshold 0.9 \u2014 a file that is never made" in failure.text
    steady = cases["steady[00]"]
    assert steady.find("failure") is None and steady.find("error") is None and float(steady.get("time")) >= 0

    run_dir = _only_run(tmp_path / "runs")
    retried = run_cli("run", "--retry-errors", run_dir)
    assert retried.code == 1  # "failing" still fails; it is not an ERROR, so it is not re-run
    ran = [name for name in ledger.names if not name.startswith("once-")]
    assert sorted(ran) == ["flaky", "flaky", "steady"]  # only flaky ran again
    document = json.loads((run_dir / "run.json").read_text())
    assert {t["task_id"]: t["status"] for t in document["task_results"]} == {
        "failing": "FAILURE",
        "flaky": "SUCCESS",
        "steady": "SUCCESS",
    }
    results = pd.read_parquet(tmp_path / "runs" / "tables" / "task_results")
    assert sorted(results["task_id"]) == ["failing", "flaky", "steady"]


def test_only_a_run_whose_own_process_died_is_marked_failed() -> None:
    """A run names the process running it; a re-execution from the UI starts with its parent's tags, the
    parent's dead worker among them: it was marked failed while its own worker ran."""
    from coder_eval_dagster.defs.resources import process_tags
    from coder_eval_dagster.launch import fail_orphaned_runs

    dead = subprocess.Popen(["true"])
    dead.wait()
    with dg.instance_for_test() as instance:

        def started(run_id: str, pid: int, pid_run: str | None) -> None:
            tags = {**process_tags(run_id), "coder_eval/pid": str(pid)}
            if pid_run is None:  # written before a run's process named its run
                del tags["coder_eval/pid_run"]
            else:
                tags["coder_eval/pid_run"] = pid_run
            run = dg.DagsterRun(job_name="evaluate", run_id=run_id, status=dg.DagsterRunStatus.STARTED, tags=tags)
            instance.add_run(run)

        started("died", dead.pid, "died")
        started("re-executed", dead.pid, "died")  # its parent's tags, copied
        started("alive", os.getpid(), "alive")
        started("earlier", dead.pid, None)
        assert sorted(fail_orphaned_runs(instance)) == ["died", "earlier"]
        statuses = {run.run_id: run.status for run in instance.get_runs()}
    assert statuses["re-executed"] == statuses["alive"] == dg.DagsterRunStatus.STARTED
