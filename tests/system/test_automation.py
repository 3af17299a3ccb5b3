"""The file sensor and the nightly schedule as operators run them: `coder-eval dev` on a fresh home.

One session of the real webserver and daemon (started by the installed
`coder-eval dev`, on a home made by `coder-eval instance init`) goes through
what an operator does to a folder of agentless task files, and reads the
outcome through the instance: which runs each change started, which
partitions each run materialized, which keys are registered, and that no
tick of the sensors or the schedule failed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
import pytest
import yaml

from ..support.dagster_services import free_port
from ..support.helpers import criterion, task_with, write, write_task

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
T = TypeVar("T")
AGENTLESS = {"agent": {"type": "none"}, "initial_prompt": None, "sandbox": {"python": None}}
TICK_TIMEOUT_S, RUN_TIMEOUT_S = 60, 180
NIGHTLY_AFTER_S = 90  # dev's start and the first run, with room for a loaded machine


class Operator:
    """A `coder-eval dev` session on a fresh home, and what an operator reads from its instance."""

    def __init__(self, root: Path, nightly_cron: str):
        self.root, self.tasks, self.home = root, root / "tasks", root / "home"
        self.log = root / "dev.log"
        self.env = {
            **os.environ,
            "DAGSTER_HOME": str(self.home),
            "CODER_EVAL_TASK_PATHS": str(self.tasks),
            "CODER_EVAL_RUNS_DIR": str(root / "runs"),
            "CODER_EVAL_AUTOMATION": "on",
            "CODER_EVAL_SENSOR_INTERVAL_S": "5",
            "CODER_EVAL_NIGHTLY_CRON": nightly_cron,
            "DAGSTER_EVENT_BATCH_SIZE": "1000",
        }
        self.seen_runs: set[str] = set()

    def init_home(self) -> str:
        done = subprocess.run(
            [str(BIN / "coder-eval"), "instance", "init"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return done.stdout

    @contextmanager
    def serve(self) -> Iterator[dg.DagsterInstance]:
        with self.log.open("wb") as log:
            dev = subprocess.Popen(
                [str(BIN / "coder-eval"), "dev", "-h", "127.0.0.1", "-p", str(free_port())],
                env=self.env,
                stdout=log,
                stderr=log,
                cwd=self.root,
                start_new_session=True,  # dagster dev and its children: one group, stopped together
            )
        try:
            with dg.DagsterInstance.from_config(str(self.home)) as instance:
                self.instance = instance
                yield instance
        finally:
            os.killpg(dev.pid, signal.SIGINT)  # as Ctrl-C: dagster dev stops its webserver, daemon, code server
            try:
                dev.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(dev.pid, signal.SIGKILL)
                dev.wait(timeout=10)

    def wait(self, what: str, probe: Callable[[], T | None], timeout: float) -> T:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = probe()
            if found:
                return found
            time.sleep(1)
        tail = self.log.read_text(errors="replace")[-4000:]
        raise AssertionError(f"no {what} after {timeout:.0f} s; dev.log ends:\n{tail}")

    def ticks(self, name: str) -> list[Any]:
        """The instigator's ticks, oldest first."""
        (state,) = [s for s in self.instance.all_instigator_state() if s.instigator_name == name]
        return sorted(self.instance.get_ticks(state.instigator_origin_id, state.selector_id), key=lambda t: t.timestamp)

    def ticks_seeing(self, edit: Callable[[], object]) -> list[Any]:
        """Apply ``edit``; the sensor ticks that may have read any of it, once a tick that started after it ended.

        A tick already under way when the edit began reads the files a moment
        after its start: it may see the edit (and request its runs), so the
        ticks taken are all those not yet finished when the edit began.
        """
        finished_before = {t.tick_id for t in self.ticks("task_files_sensor") if t.status.value != "STARTED"}
        edit()
        since = time.time()

        def settled() -> list[Any] | None:
            seen = [t for t in self.ticks("task_files_sensor") if t.tick_id not in finished_before]
            done = all(t.status.value != "STARTED" for t in seen) and any(t.timestamp > since for t in seen)
            return seen if done else None

        return self.wait("finished sensor tick", settled, TICK_TIMEOUT_S)

    def runs_of(self, selected: dg.RunsFilter, count: int, timeout: float = RUN_TIMEOUT_S) -> list[dg.DagsterRun]:
        """The ``count`` runs selected and not seen before, once all have succeeded (oldest first)."""

        def done() -> list[dg.DagsterRun] | None:
            runs = [r for r in self.instance.get_runs(selected) if r.run_id not in self.seen_runs]
            failed = [r.run_id for r in runs if r.status in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)]
            assert not failed, f"run(s) {failed} failed; see their logs in the UI"
            finished = len(runs) == count and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
            return runs[::-1] if finished else None

        runs = self.wait(f"{count} succeeded run(s) of {selected}", done, timeout)
        self.seen_runs.update(r.run_id for r in runs)
        return runs

    def change(self, edit: Callable[[], object]) -> list[dg.DagsterRun]:
        """Apply ``edit`` to the task files; the runs that the sensor ticks which saw it started, succeeded."""
        ticks = self.ticks_seeing(edit)
        assert all(t.status.value in ("SUCCESS", "SKIPPED") for t in ticks), [t.error for t in ticks]
        run_ids = [run_id for tick in ticks for run_id in tick.run_ids]
        return self.runs_of(dg.RunsFilter(run_ids=run_ids), len(run_ids)) if run_ids else []

    def materialized(self, run: dg.DagsterRun) -> list[str]:
        """The partitions of criteria_scores the run materialized."""
        records = self.instance.get_records_for_run(
            run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
        ).records
        events = [r.event_log_entry.dagster_event for r in records]
        return sorted(e.partition for e in events if e.asset_key == dg.AssetKey("criteria_scores"))

    def tasks_registered(self) -> list[str]:
        return list(self.instance.get_dynamic_partitions("task"))

    def logged(self, text: str) -> int:
        return sum(text in line for line in self.log.read_text(errors="replace").splitlines())


def project(tasks: Path) -> None:
    checks = [criterion("run_command", command="true")]
    write_task(tasks, task_with(task_id="alpha", success_criteria=checks, **AGENTLESS), "alpha.yaml")
    dataset = {"rows": [{"id": "r1"}, {"id": "r2"}]}
    write_task(tasks, task_with(task_id="beta", dataset=dataset, success_criteria=checks, **AGENTLESS), "beta.yaml")


def edit_yaml(path: Path, change: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
    def apply() -> None:
        data = yaml.safe_load(path.read_text())
        change(data)
        staged = path.with_name(f".{path.name}.tmp")  # as editors save: a tick never reads a half-written file
        staged.write_text(yaml.safe_dump(data, sort_keys=False))
        staged.replace(path)

    return apply


def describe(text: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["success_criteria"][0]["description"] = text

    return change


def rows(*entries: dict[str, str]) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["dataset"]["rows"] = list(entries)

    return change


R1, R2, R3 = {"id": "r1"}, {"id": "r2", "note": "edited"}, {"id": "r3"}


def next_minute_after(seconds: float) -> datetime:
    """The first minute boundary at least ``seconds`` from now (a cron tick falls on one)."""
    return (datetime.now(UTC) + timedelta(seconds=seconds + 59)).replace(second=0, microsecond=0)


def test_sensor_and_schedule_under_the_daemon(tmp_path: Path) -> None:
    # the cron tick once the first run is in (a few seconds' work; 15 s on a quiet machine), before any edit:
    # waiting for it after the edits left the daemon idle for minutes
    nightly = next_minute_after(NIGHTLY_AFTER_S)
    operator = Operator(tmp_path, f"{nightly.minute} {nightly.hour} * * *")
    assert operator.init_home() == f"wrote: {tmp_path / 'home/dagster.yaml'}\n"
    project(operator.tasks)
    alpha, beta = operator.tasks / "alpha.yaml", operator.tasks / "beta.yaml"
    files = dg.RunsFilter(tags={"coder_eval/trigger": "files"})
    started = time.monotonic()
    with operator.serve():
        # new files: registered, and one run over all of them
        (first,) = operator.runs_of(files, 1)
        print(f"dev start to the first run's success: {time.monotonic() - started:.1f} s")
        assert operator.tasks_registered() == ["alpha", "beta/r1", "beta/r2"]
        assert operator.materialized(first) == ["alpha|default", "beta/r1|default", "beta/r2|default"]

        # a key no served file defines (a `coder-eval run` of a file elsewhere registers its keys too)
        operator.instance.add_dynamic_partitions("task", ["elsewhere"])

        # the cron tick: a run over the registered row-tasks the files define
        until_night = (nightly - datetime.now(UTC)).total_seconds()
        assert until_night > 0, "the first run ended after the cron tick: raise NIGHTLY_AFTER_S"
        (night,) = operator.runs_of(
            dg.RunsFilter(tags={"coder_eval/trigger": "nightly"}), 1, until_night + RUN_TIMEOUT_S
        )
        assert night.tags["coder_eval/night"] == nightly.strftime("%Y-%m-%d")
        assert night.tags["dagster/asset_partition_range_end"] == "beta/r2|default"
        assert operator.materialized(night) == ["alpha|default", "beta/r1|default", "beta/r2|default"]

        # an edit (one criterion's text): a run of that row-task only, where its key is
        clock = time.monotonic()
        (edited,) = operator.change(edit_yaml(alpha, describe("edited")))
        print(f"edit to its run's success: {time.monotonic() - clock:.1f} s")
        assert operator.materialized(edited) == ["alpha|default"]
        assert operator.tasks_registered() == ["alpha", "beta/r1", "beta/r2", "elsewhere"]

        # the revert: the first tick's fingerprint again, and a run again (a new run key)
        (reverted,) = operator.change(edit_yaml(alpha, describe("a run_command check")))
        assert operator.materialized(reverted) == ["alpha|default"]
        run_keys = [run.tags["dagster/run_key"] for run in (first, edited, reverted)]
        assert len(set(run_keys)) == 3

        # two changes apart (alpha; beta's row r2): a ranged run each into one folder, then suite_metrics once
        def alpha_and_r2() -> None:
            edit_yaml(alpha, describe("edited again"))()
            edit_yaml(beta, rows(R1, R2))()

        parts = operator.change(alpha_and_r2)
        assert sorted(p for run in parts for p in operator.materialized(run)) == ["alpha|default", "beta/r2|default"]
        folder = parts[0].tags["coder_eval/run_folder"]
        (summary,) = operator.runs_of(dg.RunsFilter(tags={"coder_eval/run_folder": folder}), 1)
        assert summary.asset_selection == {dg.AssetKey("suite_metrics"), dg.AssetKey("variant_comparison")}
        assert (tmp_path / "runs" / folder / "run.json").is_file()

        # a broken file beside a new row: the file is logged and skipped, the new row runs
        def broken_and_new_row() -> None:
            write(operator.tasks / "broken.yaml", "task_id: broken\ndescription: [oops\n")
            edit_yaml(beta, rows(R1, R2, R3))()

        (new_row,) = operator.change(broken_and_new_row)
        assert operator.materialized(new_row) == ["beta/r3|default"]
        assert operator.logged(f"skipped: {operator.tasks / 'broken.yaml'}:2: (document): YAML syntax error")

        # the broken file removed and a row deleted: the row's key is retired, nothing runs
        def fixed_and_row_deleted() -> None:
            (operator.tasks / "broken.yaml").unlink()
            edit_yaml(beta, rows(R2, R3))()

        assert operator.change(fixed_and_row_deleted) == []
        assert operator.tasks_registered() == ["alpha", "beta/r2", "elsewhere", "beta/r3"]

        # a deleted file: its partitions are retired
        assert operator.change(alpha.unlink) == []
        assert operator.tasks_registered() == ["beta/r2", "elsewhere", "beta/r3"]  # only its own keys retired

        assert operator.logged("BetaWarning") == 0  # a notice for library authors, once per run worker
        # each tick stores the cursor: it names the fingerprints rather than holding one per key
        assert max(len(tick.cursor or "") for tick in operator.ticks("task_files_sensor")) < 200
        for name in ("task_files_sensor", "summary_after_chunks", "nightly_suite"):
            failed = [tick.error for tick in operator.ticks(name) if tick.status.value == "FAILURE"]
            assert not failed, (name, failed)
    print(f"whole session: {time.monotonic() - started:.1f} s")
