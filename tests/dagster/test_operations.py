"""The file sensor and the nightly schedule, against a real temporary Dagster instance."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml

from coder_eval_dagster.core import fingerprints as fingerprints_module
from coder_eval_dagster.core import resolution as resolution_module
from coder_eval_dagster.core.places import DEFAULT_DAGSTER_HOME
from coder_eval_dagster.definitions import JOB_NAME, build_definitions
from coder_eval_dagster.defs.dagster_private import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)
from coder_eval_dagster.defs.names import CHUNK_TAG, RUN_FOLDER_TAG
from coder_eval_dagster.defs.resources import CoderEvalSettings, RunOptionsConfig, RunSpecConfig
from coder_eval_dagster.defs.schedules import nightly_suite
from coder_eval_dagster.defs.sensors import (
    FINGERPRINTS_KEY,
    INTERVAL_ENV,
    KEPT_FINGERPRINTS,
    current_fingerprints,
    minimum_interval_s,
    task_files_sensor,
)
from coder_eval_dagster.storage import INSTANCE_YAML

from ..support.dagster_services import sensor_tick
from ..support.helpers import criterion, run_cli, run_folders, task_with, write, write_task


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
    return CoderEvalSettings(
        spec=RunSpecConfig(task_paths=[str(root / "tasks")]), options=RunOptionsConfig(runs_dir=str(root / "runs"))
    )


def run_requests(
    instance: dg.DagsterInstance, settings: CoderEvalSettings, requests: Sequence[dg.RunRequest]
) -> list[str]:
    """Execute the requests in-process as the daemon would (into a fresh runs_dir); the row-tasks evaluated."""
    job = build_definitions(settings).resolve_job_def(JOB_NAME)
    for request in requests:
        result = job.execute_in_process(
            instance=instance, tags=request.tags, asset_selection=request.asset_selection, raise_on_error=False
        )
        assert result.success
    (run_dir,) = run_folders(Path(settings.run_options().runs_dir))
    return sorted(str(path.parent.parent.relative_to(run_dir / "default")) for path in run_dir.rglob("task.json"))


def elsewhere(settings: CoderEvalSettings, runs_dir: Path) -> CoderEvalSettings:
    return CoderEvalSettings(spec=settings.spec, options=RunOptionsConfig(runs_dir=str(runs_dir)))


def edit(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


def test_sensor_registers_runs_and_reruns_only_what_changed(tmp_path, instance):
    settings = project(tmp_path)
    first = sensor_tick(instance, settings, None)
    assert instance.get_dynamic_partitions("task") == ["alpha", "beta/r1", "beta/r2"]
    assert instance.get_dynamic_partitions("variant") == ["default"]
    assert run_requests(instance, settings, first.run_requests) == ["alpha", "beta/r1", "beta/r2"]

    unchanged = sensor_tick(instance, settings, first.cursor)
    assert not unchanged.run_requests and not unchanged.dynamic_partitions_requests
    assert unchanged.cursor == first.cursor
    fingerprints, _ = current_fingerprints(settings.run_spec(), logging.getLogger(__name__))
    for earlier_form in (  # what the sensor kept before: the fingerprints in the cursor, with the count or alone
        json.dumps({"fingerprints": fingerprints, "requests": 1}),
        json.dumps(fingerprints),
    ):
        assert not sensor_tick(instance, settings, earlier_form).run_requests

    # a template file of beta changes: both of its rows, and nothing else, re-run
    write(tmp_path / "tasks/tpl/a.txt", "two")
    changed = sensor_tick(instance, settings, first.cursor)
    settings = elsewhere(settings, tmp_path / "runs2")
    assert run_requests(instance, settings, changed.run_requests) == ["beta/r1", "beta/r2"]

    # alpha's criterion changes: alpha runs alone, where it is (no key moves)
    edit(tmp_path / "tasks/alpha.yaml", "a.txt", "b.txt")
    again = sensor_tick(instance, settings, changed.cursor)
    assert instance.get_dynamic_partitions("task") == ["alpha", "beta/r1", "beta/r2"]
    assert not again.dynamic_partitions_requests
    settings = elsewhere(settings, tmp_path / "runs3")
    assert run_requests(instance, settings, again.run_requests) == ["alpha"]

    # a row is deleted: its key is retired, nothing runs; a new row is added at the end and runs alone. A key
    # the sensor never defined (a `coder-eval run` of another task, a variant of another experiment) stays.
    instance.add_dynamic_partitions("task", ["cli-only"])
    instance.add_dynamic_partitions("variant", ["cli-variant"])
    beta = yaml.safe_load((tmp_path / "tasks/beta.yaml").read_text())
    beta["dataset"]["rows"] = [{"id": "r2"}]
    (tmp_path / "tasks/beta.yaml").write_text(yaml.safe_dump(beta))
    retired = sensor_tick(instance, settings, again.cursor)
    assert not retired.run_requests and instance.get_dynamic_partitions("task") == ["alpha", "beta/r2", "cli-only"]
    assert retired.skip_message == "retired 1 task key(s)"  # (the tick history said: an empty result)
    assert instance.get_dynamic_partitions("variant") == ["default", "cli-variant"]
    instance.delete_dynamic_partition("task", "cli-only")
    beta["dataset"]["rows"] = [{"id": "r2"}, {"id": "r3"}]
    (tmp_path / "tasks/beta.yaml").write_text(yaml.safe_dump(beta))
    added = sensor_tick(instance, settings, retired.cursor)
    assert instance.get_dynamic_partitions("task") == ["alpha", "beta/r2", "beta/r3"]
    settings = elsewhere(settings, tmp_path / "runs4")
    assert run_requests(instance, settings, added.run_requests) == ["beta/r3"]

    # turned on again (no cursor): what the instance evaluated is the baseline, only a never-evaluated key runs
    beta["dataset"]["rows"] = [{"id": "r2"}, {"id": "r3"}, {"id": "r4"}]
    (tmp_path / "tasks/beta.yaml").write_text(yaml.safe_dump(beta))
    turned_on = sensor_tick(instance, settings, None)
    settings = elsewhere(settings, tmp_path / "runs5")
    assert run_requests(instance, settings, turned_on.run_requests) == ["beta/r4"]


def _stored_fingerprints(instance: dg.DagsterInstance) -> int:
    """How many entries of fingerprints the instance's key-value store holds (not emptied, not an index)."""
    from dagster._core.storage.runs.schema import KeyValueStoreTable
    from sqlalchemy import func, select

    prefix, table = FINGERPRINTS_KEY.split("{")[0], KeyValueStoreTable
    with instance.run_storage.connect() as connection:  # type: ignore[attr-defined]
        where = table.c.key.like(f"{prefix}%") & ~table.c.key.like("%/index") & (table.c.value != "")
        return int(connection.execute(select(func.count()).where(where)).scalar())


def _ran(tick: Any) -> list[str]:
    return [r.tags["dagster/asset_partition_range_start"] for r in tick.run_requests]


def test_the_sensor_cursor_stays_small_and_no_dry_run_or_other_sensor_loses_an_edit(tmp_path, instance):
    """Dagster stores the cursor with every tick, skipped ones too: it held a fingerprint per key, 0.46 MB a tick
    at 10,000 keys. It names them now, in an entry that never changes once written: a tick never committed
    ("Test sensor", given the committed cursor, an older one or none) cannot change what the committed names."""
    settings = project(tmp_path)
    beta = yaml.safe_load((tmp_path / "tasks/beta.yaml").read_text())
    beta["dataset"]["rows"] = [{"id": f"r{i}"} for i in range(2000)]
    (tmp_path / "tasks/beta.yaml").write_text(yaml.safe_dump(beta))
    first = sensor_tick(instance, settings, None)
    assert len(first.cursor) < 100, first.cursor

    edit(tmp_path / "tasks/alpha.yaml", "a.txt", "b.txt")
    committed = sensor_tick(instance, settings, first.cursor)
    assert _ran(committed) == ["alpha|default"]
    edit(tmp_path / "tasks/alpha.yaml", "b.txt", "c.txt")
    for cursor in (committed.cursor, first.cursor, None, committed.cursor):  # dry runs, never committed
        sensor_tick(instance, settings, cursor)
    other = sensor_tick(instance, settings, None, repository="another")  # another code location's sensor
    real = sensor_tick(instance, settings, committed.cursor)
    assert _ran(real) == ["alpha|default"]  # the edit since the committed tick runs, once
    assert not sensor_tick(instance, settings, real.cursor).run_requests
    assert not sensor_tick(instance, settings, other.cursor, repository="another").run_requests
    assert _stored_fingerprints(instance) == 4  # three contents of one sensor, one of the other


def test_the_sensor_keeps_its_last_entries_only(tmp_path, instance):
    """However many edits: the entries read or written last, the committed cursor's among them."""
    settings = project(tmp_path)
    cursor = sensor_tick(instance, settings, None).cursor
    for index in range(KEPT_FINGERPRINTS + 3):
        edit(tmp_path / "tasks/alpha.yaml", f"{index}.txt" if index else "a.txt", f"{index + 1}.txt")
        cursor = sensor_tick(instance, settings, cursor).cursor
    assert _stored_fingerprints(instance) == KEPT_FINGERPRINTS
    assert not sensor_tick(instance, settings, cursor).run_requests


def test_a_cursor_set_by_hand_is_a_first_tick_never_a_failing_one(tmp_path, instance):
    settings = project(tmp_path)
    run_requests(instance, settings, sensor_tick(instance, settings, None).run_requests)
    for hand_set in ('{"lineage": "x", "digest": "y", "requests": 4}', '{"requests": 4}', "null", '"x"', "{oops"):
        assert not sensor_tick(instance, settings, hand_set).run_requests, hand_set  # all evaluated: nothing to run


def test_a_cursor_whose_fingerprints_are_gone_is_a_first_tick_once(tmp_path, instance):
    """A cursor copied from another instance (or set by hand) names nothing here: taken as turned on, once; the
    next tick has its fingerprints again (it emptied them at every tick, and lost the next edit)."""
    settings = project(tmp_path)
    with dg.instance_for_test() as elsewhere_instance:
        copied = sensor_tick(elsewhere_instance, settings, None).cursor
    first = sensor_tick(instance, settings, copied)
    assert [r.tags["dagster/asset_partition_range_start"] for r in first.run_requests] == ["alpha|default"]
    run_requests(instance, settings, first.run_requests)
    assert not sensor_tick(instance, settings, first.cursor).run_requests
    edit(tmp_path / "tasks/alpha.yaml", "a.txt", "b.txt")
    edited = sensor_tick(instance, settings, first.cursor)
    assert [r.tags["dagster/asset_partition_range_start"] for r in edited.run_requests] == ["alpha|default"]


def test_the_sensor_interval_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert minimum_interval_s() == 30 == task_files_sensor.minimum_interval_seconds
    monkeypatch.setenv(INTERVAL_ENV, "5")
    assert minimum_interval_s() == 5
    monkeypatch.setenv(INTERVAL_ENV, "soon")
    with pytest.raises(
        ValueError, match=f"{INTERVAL_ENV}='soon': expected a whole number, at most 9 digits \\(of seconds\\)"
    ):
        minimum_interval_s()


def test_a_reverted_file_runs_again(tmp_path, instance):
    """A -> B -> A: each tick's run key is new, so Dagster launches the revert instead of skipping it."""
    settings = project(tmp_path)
    cursor, keys = None, []
    for old, new in ((None, None), ("a.txt", "b.txt"), ("b.txt", "a.txt")):
        if old:
            edit(tmp_path / "tasks/alpha.yaml", old, new)
        result = sensor_tick(instance, settings, cursor)
        keys += [request.run_key for request in result.run_requests]
        cursor = result.cursor
    assert len(keys) == 3 and len(set(keys)) == 3


def test_separate_changes_run_where_they_are_into_one_folder(tmp_path, instance):
    """Changed keys apart from each other: one ranged run each, sharing a run folder (a summary follows)."""
    settings = project(tmp_path)
    first = sensor_tick(instance, settings, None)
    edit(tmp_path / "tasks/alpha.yaml", "a.txt", "b.txt")
    edit(tmp_path / "tasks/beta.yaml", "id: r2", "id: r2\n    note: x")
    both = sensor_tick(instance, settings, first.cursor)
    assert instance.get_dynamic_partitions("task") == ["alpha", "beta/r1", "beta/r2"]
    assert [r.tags[CHUNK_TAG] for r in both.run_requests] == ["0", "1"]
    assert len({r.tags[RUN_FOLDER_TAG] for r in both.run_requests}) == 1
    assert run_requests(instance, elsewhere(settings, tmp_path / "runs2"), both.run_requests) == ["alpha", "beta/r2"]


def test_a_file_whose_resolution_crashes_is_logged_and_the_rest_runs(tmp_path, instance, monkeypatch, capfd):
    settings = project(tmp_path)
    expand, digest = resolution_module._expand_rows, fingerprints_module.folder_digest

    def crash_on_alpha(task, *args):
        if task.task_id == "alpha":
            raise KeyError("boom")
        return expand(task, *args)

    def unreadable_template(folder: Path) -> str:
        if folder.name == "tpl":
            raise PermissionError(13, "Permission denied", str(folder))
        return digest(folder)

    monkeypatch.setattr(resolution_module, "_expand_rows", crash_on_alpha)
    first = sensor_tick(instance, settings, None)
    assert instance.get_dynamic_partitions("task") == ["beta/r1", "beta/r2"]
    assert ranges(first.run_requests) == [("beta/r1|default", "beta/r2|default")]
    assert logged(capfd, f"skipped: {tmp_path / 'tasks/alpha.yaml'}: resolution crashed: KeyError: 'boom'")
    # the cause gone, the next tick runs alpha; meanwhile beta's template folder cannot be read:
    # beta is skipped the same way, and not retired
    monkeypatch.setattr(resolution_module, "_expand_rows", expand)
    monkeypatch.setattr(fingerprints_module, "folder_digest", unreadable_template)
    second = sensor_tick(instance, settings, first.cursor)
    assert instance.get_dynamic_partitions("task") == ["beta/r1", "beta/r2", "alpha"]
    assert ranges(second.run_requests) == [("alpha|default", "alpha|default")]
    assert logged(capfd, f"skipped: {tmp_path / 'tasks/beta.yaml'}: resolution crashed: PermissionError: ")
    monkeypatch.setattr(fingerprints_module, "folder_digest", digest)
    third = sensor_tick(instance, settings, second.cursor)
    assert not third.run_requests and not third.dynamic_partitions_requests


def ranges(requests: Sequence[dg.RunRequest]) -> list[tuple[str, str]]:
    return [(r.tags[ASSET_PARTITION_RANGE_START_TAG], r.tags[ASSET_PARTITION_RANGE_END_TAG]) for r in requests]


def logged(capfd: pytest.CaptureFixture[str], text: str) -> bool:
    """The tick's log (Dagster's console logger) since the last look has exactly one line with ``text``."""
    return sum(text in line for line in capfd.readouterr().err.splitlines()) == 1


def test_invalid_file_is_logged_and_skipped(tmp_path, instance, capfd):
    settings = project(tmp_path)
    first = sensor_tick(instance, settings, None)
    write(tmp_path / "tasks/broken.yaml", "task_id: broken\ndescription: [oops\n")
    # a run launched the UI way still evaluates every valid row-task
    assert run_requests(instance, settings, first.run_requests) == ["alpha", "beta/r1", "beta/r2"]
    capfd.readouterr()
    result = sensor_tick(instance, settings, first.cursor)
    assert not result.run_requests and instance.get_dynamic_partitions("task") == ["alpha", "beta/r1", "beta/r2"]
    assert logged(capfd, f"skipped: {tmp_path / 'tasks/broken.yaml'}:2: (document): YAML syntax error")
    # the UI's tick history names it too (the log lines go to the daemon's output only)
    assert result.skip_message.startswith(f"skipped: {tmp_path / 'tasks/broken.yaml'}:2: (document): YAML syntax")
    # a known task's file breaks: it is skipped, not retired, and nothing runs
    (tmp_path / "tasks/alpha.yaml").write_text("task_id: alpha\ndescription: [oops\n")
    (tmp_path / "tasks/broken.yaml").unlink()
    broken = sensor_tick(instance, settings, result.cursor)
    assert not broken.run_requests and instance.get_dynamic_partitions("task") == ["alpha", "beta/r1", "beta/r2"]


def test_nightly_schedule_runs_everything_in_one_run(tmp_path, instance):
    settings = project(tmp_path)

    def night():  # its context closed after, as the daemon closes it (left open, it outlives the instance)
        with dg.build_schedule_context(
            instance=instance,
            scheduled_execution_time=datetime(2026, 12, 3, 2, tzinfo=UTC),
            resources={"settings": settings},
        ) as context:
            return nightly_suite(context)

    assert isinstance(night(), dg.SkipReason)
    sensor_tick(instance, settings, None)
    (request,) = night()
    assert request.run_key == "nightly-2026-12-03" and request.tags["coder_eval/night"] == "2026-12-03"
    assert run_requests(instance, settings, [request]) == ["alpha", "beta/r1", "beta/r2"]
    assert nightly_suite.cron_schedule == "0 2 * * *" and nightly_suite.execution_timezone == "UTC"


def test_instance_init_puts_coder_evals_dagster_yaml_in_a_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    assert run_cli("instance", "init", home).out == f"wrote: {home / 'dagster.yaml'}\n"
    assert (home / "dagster.yaml").read_text() == INSTANCE_YAML.format(base=home)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.run_storage).__name__ == "FastSqliteRunStorage" and instance.get_runs() == []
    (home / "dagster.yaml").write_text("telemetry: {enabled: false}\n")  # an operator's own: left alone
    assert run_cli("instance", "init", home).out == f"kept, already there: {home / 'dagster.yaml'}\n"
    assert (home / "dagster.yaml").read_text() == "telemetry: {enabled: false}\n"
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "default"))
    assert run_cli("instance", "init").out == f"wrote: {tmp_path / 'default/dagster.yaml'}\n"


def test_the_repository_dagster_yaml_is_the_one_coder_eval_writes() -> None:
    regenerate = (
        "python -c 'from coder_eval_dagster.storage import INSTANCE_YAML; "
        'print(INSTANCE_YAML.format(base=".dagster"), end="")\' > dagster.yaml'
    )
    expected = INSTANCE_YAML.format(base=DEFAULT_DAGSTER_HOME)
    assert (Path(__file__).parent.parent.parent / "dagster.yaml").read_text() == expected, regenerate


def test_scoring_selected_without_its_sandbox_step_fails_saying_so_and_records_nothing(tmp_path, instance):
    """A UI backfill of criteria_scores alone starts a new, empty run folder: the step fails naming what to select,
    instead of writing every evaluation as an ERROR into the history tables."""
    settings = project(tmp_path)
    first = sensor_tick(instance, settings, None)
    (request,) = first.run_requests
    job = build_definitions(settings).resolve_job_def(JOB_NAME)
    selection = [dg.AssetKey("criteria_scores"), dg.AssetKey("suite_metrics")]
    result = job.execute_in_process(
        instance=instance, tags=request.tags, asset_selection=selection, raise_on_error=False
    )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert "sandbox_runs did not run for them" in failure.step_failure_data.error.message
    assert not list(Path(settings.run_options().runs_dir).rglob("task.json"))
    assert not (Path(settings.run_options().runs_dir) / "tables").exists()
    (folder,) = run_folders(Path(settings.run_options().runs_dir))  # report says so (it suggested --rebuild)
    reported = run_cli("report", folder)
    assert reported.code == 2, reported
    assert f"{folder}: no run.json, and no evaluation of the run finished: nothing to report" in reported.err


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ({"spec": {"sample": 0}}, "resources.settings.config.spec.sample: Input should be greater than or equal to 1"),
        (
            {"spec": {"driver": "dockr"}},
            "resources.settings.config.spec.driver: Input should be 'tempdir' or 'docker' (did you mean `docker`?)",
        ),
        (
            {"options": {"backend": "nope"}},
            "resources.settings.config.options.backend: unknown API backend 'nope': use direct or bedrock",
        ),
    ],
    ids=["bound", "validator", "resource-init"],
)
def test_a_launchpad_config_the_core_refuses_fails_in_one_line_naming_its_field(
    tmp_path: Path, instance: dg.DagsterInstance, config: dict[str, Any], said: str
) -> None:
    """Dagster's config schema took them; the run failed with pydantic's error of the model, its link and stack."""
    settings = project(tmp_path)
    spec = {"task_paths": [str(tmp_path / "tasks")], **config.get("spec", {})}
    run_config = {"resources": {"settings": {"config": {**config, "spec": spec}}}}
    job = build_definitions(settings).resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        instance=instance,
        run_config=run_config,
        asset_selection=[dg.AssetKey("task_definitions")],
        raise_on_error=False,
    )
    errors = [error.message for event in result.all_events if (error := getattr(event.event_specific_data, "error", 0))]
    assert not result.success
    assert f"dagster._core.definitions.events.Failure: {said}\n" in errors, errors  # the step's, or the resource's


def test_a_code_location_restarted_without_its_experiment_retires_and_runs_nothing(tmp_path: Path, instance) -> None:
    """Restarted once without CODER_EVAL_EXPERIMENT, the sensor retired the experiment's variants and ran the
    default one; with the setting back, it ran every evaluation of the suite again though no file had changed."""
    served = project(tmp_path)
    experiment = write(tmp_path / "ab.yaml", "experiment_id: ab\nvariants: [{variant_id: base}, {variant_id: alt}]\n")
    spec = RunSpecConfig(task_paths=[str(tmp_path / "tasks")], experiment=str(experiment))
    with_experiment = CoderEvalSettings(spec=spec, options=served.options)
    first = sensor_tick(instance, with_experiment, None)
    assert len(first.run_requests) == 1 and instance.get_dynamic_partitions("variant") == ["base", "alt"]
    without = sensor_tick(instance, served, first.cursor)
    assert not without.run_requests and not without.dynamic_partitions_requests
    assert without.cursor in (None, first.cursor)  # kept
    assert "share none with the last tick's (alt, base)" in (without.skip_message or "")
    assert instance.get_dynamic_partitions("variant") == ["base", "alt"]
    back = sensor_tick(instance, with_experiment, first.cursor)  # the daemon kept the cursor the skip left
    assert not back.run_requests and not back.dynamic_partitions_requests
