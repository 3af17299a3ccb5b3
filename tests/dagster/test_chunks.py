"""Chunked runs: the backfill policy, a tick split into chunk runs sharing one folder, suite_metrics once after them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from coder_eval_dagster.core.chunking import PARTITIONS_PER_RUN_ENV, partitions_per_run, task_chunks
from coder_eval_dagster.definitions import JOB_NAME, build_definitions
from coder_eval_dagster.defs.assets import backfill_policy
from coder_eval_dagster.defs.names import CHUNK_ASSETS, CHUNK_TAG, RUN_FOLDER_TAG, SUMMARY_ASSETS
from coder_eval_dagster.defs.partitions import Rectangle, rectangles
from coder_eval_dagster.defs.resources import CoderEvalSettings, RunOptionsConfig, RunSpecConfig
from coder_eval_dagster.defs.schedules import nightly_suite
from coder_eval_dagster.defs.sensors import summary_after_chunks

from ..support.helpers import criterion, task_with, write_task

AGENTLESS = {"agent": {"type": "none"}, "initial_prompt": None, "sandbox": {"python": None}}
NIGHT = datetime(2026, 12, 3, 2, tzinfo=UTC)
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


def test_partitions_per_run_is_read_from_the_environment() -> None:
    assert partitions_per_run({}) is None and partitions_per_run({PARTITIONS_PER_RUN_ENV: "0"}) is None
    assert partitions_per_run({PARTITIONS_PER_RUN_ENV: "10"}) == 10
    with pytest.raises(ValueError, match=f"{PARTITIONS_PER_RUN_ENV}='ten': expected a whole number"):
        partitions_per_run({PARTITIONS_PER_RUN_ENV: "ten"})
    assert backfill_policy(None).max_partitions_per_run is None
    assert backfill_policy(10).max_partitions_per_run == 10


def test_chunks_are_contiguous_rows_of_whole_variants() -> None:
    tasks = [f"t{i}" for i in range(5)]
    assert task_chunks(tasks, 1, None) == [tasks]
    assert task_chunks(tasks, 1, 2) == [["t0", "t1"], ["t2", "t3"], ["t4"]]
    assert task_chunks(tasks, 2, 4) == [["t0", "t1"], ["t2", "t3"], ["t4"]]  # 2 tasks x 2 variants per run
    assert task_chunks(tasks, 3, 2) == [[t] for t in tasks]  # never an empty chunk


def test_changed_keys_become_rectangles_where_they_are() -> None:
    tasks, variants = ["a", "b", "c", "d"], ["v1", "v2", "v3"]
    assert rectangles([(t, v) for t in "bc" for v in variants], tasks, variants) == [Rectangle(["b", "c"], variants)]
    assert rectangles([("a", "v1"), ("c", "v1")], tasks, variants) == [
        Rectangle(["a"], ["v1"]),
        Rectangle(["c"], ["v1"]),
    ]
    # variants with the same changed tasks share a rectangle only where they are next to each other
    pairs = [("a", "v1"), ("a", "v3"), ("b", "v2"), ("c", "v2")]
    assert rectangles(pairs, tasks, variants) == [
        Rectangle(["a"], ["v1"]),
        Rectangle(["a"], ["v3"]),
        Rectangle(["b", "c"], ["v2"]),
    ]
    assert rectangles([], tasks, variants) == []


def _project(root: Path) -> CoderEvalSettings:
    write_task(
        root / "tasks",
        task_with(
            task_id="many",
            dataset={"rows": [{"id": f"r{i}"} for i in range(5)]},
            success_criteria=[criterion("run_command", command="true")],
            **AGENTLESS,
        ),
    )
    return CoderEvalSettings(
        spec=RunSpecConfig(task_paths=[str(root / "tasks")]), options=RunOptionsConfig(runs_dir=str(root / "runs"))
    )


def _execute(instance: dg.DagsterInstance, settings: CoderEvalSettings, request: dg.RunRequest) -> dg.DagsterRun:
    job = build_definitions(settings).resolve_job_def(JOB_NAME)
    result = job.execute_in_process(
        instance=instance, tags=request.tags, asset_selection=request.asset_selection, raise_on_error=False
    )
    assert result.success
    return result.dagster_run


def _summary_request(instance: dg.DagsterInstance, run: dg.DagsterRun) -> dg.RunRequest | None:
    (record,) = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.RUN_SUCCESS).records
    context = dg.build_run_status_sensor_context(
        sensor_name=summary_after_chunks.name,
        dagster_event=record.event_log_entry.dagster_event,
        dagster_instance=instance,
        dagster_run=run,
    )
    return summary_after_chunks(context)


def test_chunked_tick_shares_one_folder_and_summarizes_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PARTITIONS_PER_RUN_ENV, "2")
    settings = _project(tmp_path)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("task", [f"many/r{i}" for i in range(5)])
        instance.add_dynamic_partitions("variant", ["default"])
        requests = _night(instance, settings)
        assert [r.run_key for r in requests] == [f"nightly-2026-12-03-chunk-{i}" for i in range(3)]
        assert all(r.asset_selection == CHUNK_ASSETS for r in requests)
        assert len({r.tags[RUN_FOLDER_TAG] for r in requests}) == 1
        first, second = _execute(instance, settings, requests[0]), _execute(instance, settings, requests[1])
        retried = _execute(instance, settings, requests[1])  # a chunk that succeeded twice counts once
        for run in (first, second, retried):  # nothing to request: Dagster goes on to the tick's next run
            assert _summary_request(instance, run) is None
        last = _execute(instance, settings, requests[2])
        folder = Path(settings.run_options().runs_dir) / requests[0].tags[RUN_FOLDER_TAG]
        assert len(list(folder.glob("*/**/task.json"))) == 5 and not (folder / "run.json").exists()
        summary = _summary_request(instance, last)
        assert isinstance(summary, dg.RunRequest) and summary.asset_selection == SUMMARY_ASSETS
        _execute(instance, settings, summary)
        assert CHUNK_TAG not in summary.tags
        # the night's tags too: filtering runs by the night finds its summary and checks
        assert (summary.tags["coder_eval/trigger"], summary.tags["coder_eval/night"]) == ("nightly", "2026-12-03")
    document = json.loads((folder / "run.json").read_text())
    assert sorted(t["task_id"] for t in document["task_results"]) == [f"many/r{i}" for i in range(5)]
    results = pd.read_parquet(Path(settings.run_options().runs_dir) / "tables" / "task_results")
    assert sorted(results["task_id"]) == [f"many/r{i}" for i in range(5)]


def test_unchunked_tick_is_one_run_of_the_whole_graph(tmp_path: Path) -> None:
    settings = _project(tmp_path)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("task", ["many/r0", "many/r1"])
        instance.add_dynamic_partitions("variant", ["default"])
        (request,) = _night(instance, settings)
    assert request.asset_selection is None and RUN_FOLDER_TAG not in request.tags


def test_the_night_leaves_out_registered_keys_no_served_file_defines(tmp_path: Path) -> None:
    """A `coder-eval run` of a file outside the served folder registers its keys too; planned, a chunk of them
    failed every night and the night never got its summary."""
    settings = _project(tmp_path)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("task", ["many/r0", "elsewhere", "many/r1", "many/r2"])
        instance.add_dynamic_partitions("variant", ["default", "gone"])
        requests = _night(instance, settings)
        assert [(r.tags[RANGE_START], r.tags[RANGE_END]) for r in requests] == [
            ("many/r0|default", "many/r0|default"),
            ("many/r1|default", "many/r2|default"),
        ]
        instance.delete_dynamic_partition("task", "many/r0")
        instance.delete_dynamic_partition("task", "many/r1")
        instance.delete_dynamic_partition("task", "many/r2")
        assert isinstance(_night(instance, settings), dg.SkipReason)


def _night(instance: dg.DagsterInstance, settings: CoderEvalSettings) -> Any:
    """The nightly tick's answer, its context closed after: left open, its instance stays Dagster's current state
    storage, and the next definitions loaded in this process fail on it once it is gone."""
    with dg.build_schedule_context(
        instance=instance, scheduled_execution_time=NIGHT, resources={"settings": settings}
    ) as context:
        return nightly_suite(context)


def test_sqlite_is_refused_when_runs_launch_in_containers(tmp_path: Path) -> None:
    settings = _project(tmp_path)
    launcher = {"module": "dagster_docker", "class": "DockerRunLauncher", "config": {"image": "coder-eval-code"}}
    with dg.instance_for_test(overrides={"run_launcher": launcher}) as instance:
        job = build_definitions(settings).resolve_job_def(JOB_NAME)
        result = job.execute_in_process(instance=instance, raise_on_error=False)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    message = failure.step_failure_data.error.message
    assert "DockerRunLauncher" in message and "SQLite" in message and "storage: postgres" in message
    assert not any(Path(settings.run_options().runs_dir).glob("*/run_plan.json"))
