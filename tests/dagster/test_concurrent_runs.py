"""CLI processes sharing one instance or one run folder, with real processes: runs started together on new keys,
and a run folder refused to a second process while its run is still going."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy.exc

from coder_eval_dagster.defs.partitions import TASK_DIMENSION
from coder_eval_dagster.launch import contiguous_block, local_instance, retried_on_collision

from ..support.helpers import run_cli, run_folders, write
from ..support.ledger import Ledger

pytestmark = pytest.mark.slow
CLI = Path(sys.executable).parent / "coder-eval"


def _rows_task(folder: Path, rows: int, pre_run: str, sandbox: dict[str, Any] | None = None) -> Path:
    """An agentless task over a dataset of ``rows`` rows."""
    (folder / "rows.jsonl").write_text("".join(json.dumps({"id": f"r{i:03d}", "n": i}) + "\n" for i in range(rows)))
    return write(
        folder / "rows.yaml",
        f"""
        task_id: rows
        description: rows
        agent: {{type: none}}
        sandbox: {json.dumps({"python": None, **(sandbox or {})})}
        dataset: {{paths: [rows.jsonl], id_field: id}}
        pre_run: [{{command: {json.dumps(pre_run)}}}]
        success_criteria: [{{type: file_exists, path: out.txt, description: out}}]
        """,
    )


def _wait_until(condition: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not condition():
        time.sleep(0.05)


def _finished(process: subprocess.Popen[str]) -> tuple[int, str]:
    """Its exit code and stderr, once it ended."""
    _, err = process.communicate(timeout=60)
    return process.returncode, err


def test_runs_started_together_on_new_keys_all_finish(tmp_path: Path) -> None:
    """Two runs over the same unregistered rows reach the keys at one moment: the test holds the instance's write
    lock until both have opened their run folders, so that both read the keys before either adds them (the second's
    add failed on the keys' UNIQUE constraint, exit 3)."""
    task = _rows_task(tmp_path, 5, "echo ${row.n} > out.txt")
    home, runs = tmp_path / "home", tmp_path / "runs"
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    assert run_cli("instance", "init", home).code == 0
    writer = sqlite3.connect(home / "history/runs/index.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    command = [str(CLI), "run", str(task), "--runs-dir", str(runs), "-j", "2"]
    processes = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    _wait_until(lambda: len(list(runs.glob("*/run_plan.json"))) == 2, 20)
    time.sleep(2)  # each goes on from its run folder to the keys
    writer.rollback()
    writer.close()
    results = [_finished(process) for process in processes]
    assert [code for code, _ in results] == [0, 0], results
    assert all((run / "run.json").is_file() for run in run_folders(runs))


def test_a_run_folder_is_refused_to_a_second_process_while_its_run_goes_on(tmp_path: Path) -> None:
    """--resume, --retry-errors and rescore are for a run whose process ended: while it runs, each is one line
    naming it, exit 2, and the run finishes alone; once it ended, the folder is free again."""
    go = threading.Event()

    def hold(_: str) -> None:  # the run's commands wait until the test lets them finish
        go.wait(30)

    ledger = Ledger(on_report=hold)
    task = _rows_task(
        tmp_path, 2, f"{ledger.report('waiting')}; echo ${{row.n}} > out.txt", {"network": ledger.network}
    )
    home, runs = tmp_path / "home", tmp_path / "runs"
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    command = [str(CLI), "run", str(task), "--runs-dir", str(runs)]
    original = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait_until(lambda: "waiting" in ledger.names, 20)
    (run_dir,) = run_folders(runs)
    second = [
        subprocess.Popen(
            [str(CLI), *words, str(run_dir)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for words in (["run", "--resume"], ["run", "--retry-errors"], ["rescore"])
    ]
    refusals = [_finished(process) for process in second]
    go.set()
    code, err = _finished(original)
    ledger.close()
    for refused, why in refusals:
        assert refused == 2 and why.count("\n") == 1, why
        assert f"{run_dir} is in use by pid {original.pid} on " in why
    assert code == 0, err
    rescored = subprocess.run([str(CLI), "rescore", str(run_dir)], env=env, capture_output=True, text=True)
    assert rescored.returncode == 0, rescored.stderr


def test_an_add_that_meets_keys_another_writer_added_reads_them_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer outside the lock (the file sensor) adds the same keys between Dagster's check and its insert."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    instance = local_instance()
    add = instance.add_dynamic_partitions

    def after_another_writer(dimension: str, keys: list[str]) -> None:
        add(dimension, keys)
        monkeypatch.setattr(instance, "add_dynamic_partitions", add)
        raise sqlalchemy.exc.IntegrityError("INSERT INTO dynamic_partitions", {}, Exception("UNIQUE constraint failed"))

    monkeypatch.setattr(instance, "add_dynamic_partitions", after_another_writer)
    arranged = retried_on_collision(partial(contiguous_block, instance, TASK_DIMENSION, ["a", "b"]))
    assert arranged == ("a", "b") and list(instance.get_dynamic_partitions(TASK_DIMENSION)) == ["a", "b"]
