"""Two ``coder-eval run`` at once on one Dagster instance, with different selections of the same row-tasks.

The later run makes its keys one contiguous block by moving them to the end of the instance's partition list;
the earlier run's next step then resolved its range to other keys (or none), scored nothing, and said PASSED,
exit 0. A step whose range no longer holds its run's row-tasks fails now, and ``--resume`` finishes the run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import CLI, SystemCli

pytestmark = pytest.mark.slow

FOUR_ROWS = """
task_id: ds
description: four rows
agent: {type: none}
sandbox: {python: null}
dataset: {rows: [{id: a}, {id: b}, {id: c}, {id: d}]}
pre_run: [{command: "echo started > started.txt; for i in $(seq 1200); do [ -e go ] && exit; sleep 0.1; done"}]
success_criteria: [{type: run_command, command: "echo ok", expected_stdout: ok, description: ok}]
"""


def _released_until_it_ends(run: subprocess.Popen[bytes], runs: Path) -> None:
    """Each started row's pre_run goes on (a ``go`` file beside its ``started.txt``) until ``run`` has ended."""
    deadline = time.monotonic() + 120
    while run.poll() is None:
        assert time.monotonic() < deadline, "the run never ended"
        for started in runs.glob("*/default/ds/*/00/sandbox/started.txt"):
            (started.parent / "go").touch()
        time.sleep(0.1)


def test_a_run_whose_keys_another_run_moved_fails_and_resumes(tmp_path: Path, system_cli: SystemCli) -> None:
    """The whole run's sandbox step is held (its rows' pre_run) until the subset run has moved the keys."""
    task = write(tmp_path / "ds.yaml", FOUR_ROWS)
    with (tmp_path / "whole.log").open("wb") as log:
        whole = system_cli.start("run", task, "--runs-dir", system_cli.runs, env={}, stdout=log)
    deadline = time.monotonic() + 60
    while not list(system_cli.runs.glob("*/default/ds/*/00/sandbox/started.txt")) and time.monotonic() < deadline:
        time.sleep(0.1)
    with (tmp_path / "subset.log").open("wb") as log:
        options = ("--task", "ds/a", "--task", "ds/c", "--runs-dir", tmp_path / "other")
        subset = system_cli.start("run", task, *options, env={}, stdout=log)
    _released_until_it_ends(subset, tmp_path / "other")
    assert subset.returncode == 0, (tmp_path / "subset.log").read_text()
    _released_until_it_ends(whole, system_cli.runs)
    said = (tmp_path / "whole.log").read_text()
    assert whole.returncode == 1, said
    assert "rearranged the partition keys" in said and "dagster._core" not in said
    (run_dir,) = [path for path in system_cli.runs.glob("2*") if path.is_dir()]
    resumed = subprocess.run(
        [str(CLI), "run", "--resume", str(run_dir)], env=system_cli.environment({}), capture_output=True, timeout=120
    )
    assert resumed.returncode == 0, (resumed.stdout + resumed.stderr).decode()
    rows = json.loads((run_dir / "run.json").read_text())["task_results"]
    assert sorted(row["task_id"] for row in rows if row["status"] == "SUCCESS") == [f"ds/{i}" for i in "abcd"]


SLEEPER = """
task_id: slow
description: sleeps in its sandbox step
agent: {type: none}
sandbox: {python: null}
pre_run: [{command: "echo started > started.txt; sleep 60"}]
success_criteria: [{type: run_command, command: "echo ok", expected_stdout: ok, description: ok}]
"""


def test_a_run_killed_in_its_sandbox_step_gives_its_pool_slot_back(tmp_path: Path, system_cli: SystemCli) -> None:
    """kill -9 mid-step left the step's agent_api slot held for ever: four such kills, and every later run on the
    instance waited for a slot at 100% CPU, deaf to Ctrl-C. The next start frees what ended runs hold."""
    import dagster as dg

    from .conftest import stop_group

    task = write(tmp_path / "slow.yaml", SLEEPER)
    killed = system_cli.start("run", task, "--runs-dir", tmp_path / "killed", env={})
    deadline = time.monotonic() + 60
    while not list((tmp_path / "killed").glob("*/default/slow/00/sandbox/started.txt")):
        assert time.monotonic() < deadline and killed.poll() is None, "the run never reached its pre_run"
        time.sleep(0.1)
    stop_group(killed)  # kill -9 of the whole group, in its sandbox step
    with dg.DagsterInstance.from_config(str(system_cli.home)) as instance:
        storage = instance.event_log_storage
        storage.set_concurrency_slots("agent_api", 1)  # the one slot the killed run holds
        assert len(storage.get_concurrency_info("agent_api").claimed_slots) == 1
    fast = write(tmp_path / "fast.yaml", SLEEPER.replace("task_id: slow", "task_id: fast").replace("sleep 60", "true"))
    outcome, run = system_cli.run(fast, env={}, timeout=60)
    assert outcome.code == 0, outcome.output
    assert run.summary["tasks_succeeded"] == 1


def test_a_run_waiting_for_a_pool_slot_sleeps_and_hears_ctrl_c(tmp_path: Path, system_cli: SystemCli) -> None:
    """Dagster 1.13.27's in-process claim loop never slept: a run waiting for an agent_api slot spun a core until it
    got one (1.25 s of CPU every 2 s), and Ctrl-C waited for the slot too. Guards ``quiet_pool_waits``."""
    import dagster as dg

    from .conftest import stop_group

    task = write(tmp_path / "slow.yaml", SLEEPER)
    holder = system_cli.start("run", task, "--runs-dir", tmp_path / "holder", env={})
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "holder").glob("*/default/slow/00/sandbox/started.txt")):
            assert time.monotonic() < deadline and holder.poll() is None, "the run never reached its pre_run"
            time.sleep(0.1)
        with dg.DagsterInstance.from_config(str(system_cli.home)) as instance:
            storage = instance.event_log_storage
            storage.set_concurrency_slots("agent_api", 1)  # the one slot the holder has
            fast = SLEEPER.replace("task_id: slow", "task_id: fast").replace("sleep 60", "true")
            waiter = system_cli.start("run", write(tmp_path / "fast.yaml", fast), "--runs-dir", tmp_path / "w", env={})
            while storage.get_concurrency_info("agent_api").pending_step_count == 0:
                assert time.monotonic() < deadline and waiter.poll() is None, "the second run never waited for a slot"
                time.sleep(0.1)
        before = cpu_seconds(waiter.pid)
        time.sleep(3)
        assert cpu_seconds(waiter.pid) - before < 0.5
        waiter.send_signal(signal.SIGINT)
        out, err = waiter.communicate(timeout=10)
        assert waiter.returncode == 130, (out + err).decode()
        assert "coder-eval: interrupted; what finished is in" in err.decode()
        assert err.decode().count("waiting for a slot of the Dagster pool agent_api") == 1, err.decode()
    finally:
        stop_group(holder)


def cpu_seconds(pid: int) -> float:
    """A process's user and system CPU so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
