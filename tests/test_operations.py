"""The file sensor and the nightly schedule, against a real temporary Dagster instance."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
import yaml

from coder_eval_dagster.definitions import JOB_NAME, build_definitions
from coder_eval_dagster.defs.evaluation.resources import CoderEvalSettings, RunSpecConfig
from coder_eval_dagster.defs.evaluation.schedules import nightly_suite
from coder_eval_dagster.defs.evaluation.sensors import task_files_sensor

from .dagster_services import apply_partition_requests
from .helpers import criterion, task_with, write, write_task


@pytest.fixture
def instance():
    with dg.instance_for_test() as test_instance:
        yield test_instance


def project(root: Path) -> CoderEvalSettings:
    agentless = {"agent": {"type": "none"}, "initial_prompt": None, "sandbox": {"python": None}}
    write_task(root / "tasks", task_with(task_id="alpha", **agentless), "alpha.yaml")
    write(root / "tasks/tpl/a.txt", "one")
    write_task(
        root / "tasks",
        task_with(
            task_id="beta",
            dataset={"rows": [{"id": "r1"}, {"id": "r2"}]},
            sandbox={"python": None, "template_sources": [{"type": "template_dir", "path": "tpl"}]},
            agent={"type": "none"},
            initial_prompt=None,
            success_criteria=[criterion("file_exists", path="a.txt")],
        ),
        "beta.yaml",
    )
    return CoderEvalSettings(spec=RunSpecConfig(task_paths=[str(root / "tasks")]), runs_dir=str(root / "runs"))


def tick(instance: dg.DagsterInstance, settings: CoderEvalSettings, cursor: str | None) -> dg.SensorResult:
    """One sensor evaluation, with its partition requests applied as the daemon applies them."""
    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"settings": settings})
    result = task_files_sensor(context)
    apply_partition_requests(instance, result)
    return result


def run_request(instance: dg.DagsterInstance, settings: CoderEvalSettings, request: dg.RunRequest) -> list[str]:
    """Execute the request in-process as the daemon would; the row-tasks it evaluated."""
    job = build_definitions(settings).resolve_job_def(JOB_NAME)
    result = job.execute_in_process(instance=instance, tags=request.tags, raise_on_error=False)
    assert result.success
    (run_dir,) = [p for p in Path(settings.runs_dir).iterdir() if p.is_dir() and p.name != "tables"]
    return sorted(t["task_id"] for t in json.loads((run_dir / "run.json").read_text())["tasks"])


def test_sensor_registers_runs_and_reruns_only_what_changed(tmp_path, instance):
    settings = project(tmp_path)
    first = tick(instance, settings, None)
    assert instance.get_dynamic_partitions("task") == ["alpha", "beta/r1", "beta/r2"]
    assert instance.get_dynamic_partitions("variant") == ["default"]
    (request,) = first.run_requests
    assert run_request(instance, settings, request) == ["alpha", "beta/r1", "beta/r2"]

    unchanged = tick(instance, settings, first.cursor)
    assert (
        unchanged.run_requests == []
        and unchanged.dynamic_partitions_requests == []
        and unchanged.cursor == first.cursor
    )

    # a template file of beta changes: both of its rows, and nothing else, re-run
    write(tmp_path / "tasks/tpl/a.txt", "two")
    changed = tick(instance, settings, first.cursor)
    assert instance.get_dynamic_partitions("task") == ["alpha", "beta/r1", "beta/r2"]
    settings = CoderEvalSettings(spec=settings.spec, runs_dir=str(tmp_path / "runs2"))
    assert run_request(instance, settings, changed.run_requests[0]) == ["beta/r1", "beta/r2"]

    # alpha's criterion changes: alpha moves to the end and runs alone
    text = (tmp_path / "tasks/alpha.yaml").read_text()
    (tmp_path / "tasks/alpha.yaml").write_text(text.replace("a.txt", "b.txt"))
    again = tick(instance, settings, changed.cursor)
    assert instance.get_dynamic_partitions("task") == ["beta/r1", "beta/r2", "alpha"]
    settings = CoderEvalSettings(spec=settings.spec, runs_dir=str(tmp_path / "runs3"))
    assert run_request(instance, settings, again.run_requests[0]) == ["alpha"]

    # a row is deleted: its key is retired, nothing runs
    beta = yaml.safe_load((tmp_path / "tasks/beta.yaml").read_text())
    beta["dataset"]["rows"] = beta["dataset"]["rows"][:1]
    (tmp_path / "tasks/beta.yaml").write_text(yaml.safe_dump(beta))
    retired = tick(instance, settings, again.cursor)
    assert retired.run_requests == [] and instance.get_dynamic_partitions("task") == ["beta/r1", "alpha"]


def test_invalid_file_is_logged_and_skipped(tmp_path, instance):
    settings = project(tmp_path)
    first = tick(instance, settings, None)
    write(tmp_path / "tasks/broken.yaml", "task_id: broken\ndescription: [oops\n")
    # a run launched the UI way still evaluates every valid row-task
    assert run_request(instance, settings, first.run_requests[0]) == ["alpha", "beta/r1", "beta/r2"]
    result = tick(instance, settings, first.cursor)
    assert result.run_requests == [] and instance.get_dynamic_partitions("task") == ["alpha", "beta/r1", "beta/r2"]
    # a known task's file breaks: it is skipped, not retired, and nothing runs
    (tmp_path / "tasks/alpha.yaml").write_text("task_id: alpha\ndescription: [oops\n")
    (tmp_path / "tasks/broken.yaml").unlink()
    broken = tick(instance, settings, result.cursor)
    assert broken.run_requests == [] and instance.get_dynamic_partitions("task") == ["alpha", "beta/r1", "beta/r2"]


def test_nightly_schedule_runs_everything_in_one_run(tmp_path, instance):
    settings = project(tmp_path)
    empty = nightly_suite(
        dg.build_schedule_context(instance=instance, scheduled_execution_time=datetime(2026, 12, 3, 2, tzinfo=UTC))
    )
    assert isinstance(empty, dg.SkipReason)
    tick(instance, settings, None)
    (request,) = nightly_suite(
        dg.build_schedule_context(instance=instance, scheduled_execution_time=datetime(2026, 12, 3, 2, tzinfo=UTC))
    )
    assert request.run_key == "nightly-2026-12-03" and request.tags["coder_eval/night"] == "2026-12-03"
    assert run_request(instance, settings, request) == ["alpha", "beta/r1", "beta/r2"]
    assert nightly_suite.cron_schedule == "0 2 * * *" and nightly_suite.execution_timezone == "UTC"
