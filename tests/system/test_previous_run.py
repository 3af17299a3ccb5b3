"""The nightly regression check reads a run against the run before it, whatever was re-materialized since."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from ..support.helpers import run_folders, write

pytestmark = pytest.mark.slow
CLI = Path(sys.executable).parent / "coder-eval"
TASK = """
task_id: shop
description: "a row passes while the dataset says so"
agent: {type: none}
sandbox: {python: null}
dataset: {paths: ["rows.jsonl"]}
success_criteria:
  - {type: run_command, command: "test ${row.ok} = 1", description: "the row is ok"}
"""
CHECK = dg.AssetCheckKey(dg.AssetKey("variant_comparison"), "no_significant_regression")


def _coder_eval(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home")}
    return subprocess.run([str(CLI), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def _rows(tmp_path: Path, ok: int) -> None:
    write(tmp_path / "rows.jsonl", "".join(json.dumps({"id": f"r{n}", "ok": ok}) + "\n" for n in range(8)))


def _run(tmp_path: Path, ok: int) -> None:
    _rows(tmp_path, ok)
    _coder_eval(tmp_path, "run", "task.yaml", "--runs-dir", "runs")


def _checks(tmp_path: Path) -> list[tuple[bool, str]]:
    """Each check's outcome and the run it read as the previous one, oldest first."""
    instance = dg.DagsterInstance.from_config(str(tmp_path / "home"))
    records = instance.event_log_storage.get_asset_check_execution_history(CHECK, limit=10)
    checks = [record.event.dagster_event.event_specific_data for record in reversed(records)]  # type: ignore[union-attr]
    return [(check.passed, check.metadata["previous_run"].value) for check in checks]


def test_a_rescored_older_run_is_not_the_previous_run_of_the_runs_after_it(tmp_path: Path) -> None:
    write(tmp_path / "task.yaml", TASK)
    _run(tmp_path, ok=1)
    _run(tmp_path, ok=0)  # eight rows regressed: McNemar p = 1/128
    first, second = run_folders(tmp_path / "runs")
    _rows(tmp_path, ok=1)  # as the first run had them
    rescored = _coder_eval(tmp_path, "rescore", str(first))  # the healthy run's check, and its materialization, again
    assert rescored.returncode == 0, rescored.stderr
    _run(tmp_path, ok=0)  # the same outcomes as the run before it: nothing regressed
    none = "none of the same task set"
    assert _checks(tmp_path) == [(True, none), (False, first.name), (True, none), (True, second.name)]


def test_a_damaged_earlier_run_is_passed_over_not_the_failure_of_the_runs_after_it(tmp_path: Path) -> None:
    """A cut-short run.json, or task_results file, of an earlier run on the instance (another runs folder too)
    failed the comparison step of every later run: exit 2 as if its input were refused, no summary, no JUnit, while
    its run.json said passed. The damaged run is passed over; `compare` of it names the damaged file, exit 2."""
    write(tmp_path / "task.yaml", TASK)
    _run(tmp_path, ok=1)
    _rows(tmp_path, ok=1)
    other = _coder_eval(tmp_path, "run", "task.yaml", "--runs-dir", "other")
    assert other.returncode == 0, other.stderr
    (first,) = run_folders(tmp_path / "runs")
    write(first / "run.json", '{"run_id": "x",')
    (table,) = (tmp_path / "other" / "tables" / "task_results").glob("*/*.parquet")
    table.write_bytes(table.read_bytes()[:100])
    later = _coder_eval(tmp_path, "run", "task.yaml", "--runs-dir", "later", "--junit", "later.xml")
    assert later.returncode == 0, later.stdout + later.stderr
    assert "PASSED 8 evaluations" in later.stdout and (tmp_path / "later.xml").is_file()
    (damaged,) = run_folders(tmp_path / "other")
    compared = _coder_eval(tmp_path, "compare", str(damaged))
    assert compared.returncode == 2 and f"{table}: not a readable task_results file" in compared.stderr


def test_a_night_of_only_errors_has_no_rate_and_no_difference(tmp_path: Path) -> None:
    """Every evaluation an ERROR (the machine broke, not the model): the plotted rates and the check's difference
    were 0.0, a fall from 100 % on the Plots tab; they are null (compare and history say "-" for the same)."""
    write(tmp_path / "task.yaml", TASK)
    _run(tmp_path, ok=1)
    broken = TASK.replace("sandbox: {python: null}", "sandbox: {python: null}\npre_run: [{command: 'exit 1'}]")
    write(tmp_path / "task.yaml", broken)
    _run(tmp_path, ok=1)
    instance = dg.DagsterInstance.from_config(str(tmp_path / "home"))
    suite = instance.get_latest_materialization_event(dg.AssetKey("suite_metrics"))
    comparison = instance.get_latest_materialization_event(dg.AssetKey("variant_comparison"))
    metadata = {
        **suite.asset_materialization.metadata,  # type: ignore[union-attr]
        **comparison.asset_materialization.metadata,  # type: ignore[union-attr]
    }
    assert [metadata[key].value for key in ("pass_rate", "mean_score", "success_rate.default")] == [None] * 3
    ((passed, previous),) = _checks(tmp_path)[-1:]
    assert passed and previous.startswith("20")
    record = instance.event_log_storage.get_asset_check_execution_history(CHECK, limit=1)[0]
    check = record.event.dagster_event.event_specific_data  # type: ignore[union-attr]
    assert check.metadata["default.difference"].value is None


def test_the_first_run_plots_its_success_rate_too(tmp_path: Path) -> None:
    """A single-variant nightly's first run (no earlier run: the step skips pandas and scipy) recorded no
    success_rate.<variant> nor run_dir: its Plots tab lost the first point."""
    write(tmp_path / "task.yaml", TASK)
    _run(tmp_path, ok=1)
    instance = dg.DagsterInstance.from_config(str(tmp_path / "home"))
    event = instance.get_latest_materialization_event(dg.AssetKey("variant_comparison"))
    assert event is not None and event.asset_materialization is not None
    metadata = event.asset_materialization.metadata
    assert metadata["comparison"].value == "one variant and no earlier run: nothing to compare yet"
    (folder,) = run_folders(tmp_path / "runs")
    assert metadata["success_rate.default"].value == 1.0 and metadata["run_dir"].value == str(folder.absolute())
