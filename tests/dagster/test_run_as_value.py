"""The run as a value (RunSpec, one resolution, a snapshot), the stage sequence, and the criterion registry."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import dagster as dg
import pandas as pd
import pytest

from coder_eval_dagster.core import resolution
from coder_eval_dagster.core.criteria import Outcome, checks, unregister
from coder_eval_dagster.core.models.criterion import Classification
from coder_eval_dagster.definitions import JOB_NAME, build_definitions
from coder_eval_dagster.defs.jobs import tick_requests
from coder_eval_dagster.defs.partitions import partition_key, rectangles
from coder_eval_dagster.defs.resources import CoderEvalSettings, RunOptionsConfig, RunSpecConfig

from ..support.dagster_services import apply_partition_requests, sensor_tick
from ..support.helpers import criterion, run_cli, run_folders, task_with, write, write_task
from ..support.ledger import Ledger

AGENTLESS = {"agent": {"type": "none"}, "initial_prompt": None, "sandbox": {"python": None}}
PASSING = {**AGENTLESS, "success_criteria": [criterion("run_command", command="true")]}


def _only_run(runs: Path) -> Path:
    (run_dir,) = run_folders(runs)
    return run_dir


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_a_cli_run_resolves_its_task_files_once(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_task(tmp_path / "tasks", task_with(task_id="a", dataset={"rows": [{"id": "1"}, {"id": "2"}]}, **PASSING))
    calls = []
    real = resolution._discover
    monkeypatch.setattr(resolution, "_discover", lambda paths: calls.append(paths) or real(paths))
    result = run_cli("run", tmp_path / "tasks", "--runs-dir", tmp_path / "runs")
    assert result.code == 0, result.err
    assert len(calls) == 1


def test_the_weighted_score_keeps_full_precision(tmp_path: Path, home: Path) -> None:
    """coder_eval stores 2/3 as 0.6666666666666666; a rounded 0.666667 moved every average built on it."""
    checks = [criterion("run_command", command=command) for command in ("true", "true", "false")]
    write_task(tmp_path / "tasks", task_with(task_id="thirds", **{**AGENTLESS, "success_criteria": checks}))
    assert run_cli("run", tmp_path / "tasks", "--runs-dir", tmp_path / "runs").code == 1
    result = json.loads((_only_run(tmp_path / "runs") / "default" / "thirds" / "00" / "task.json").read_text())
    assert result["weighted_score"] == 2 / 3


def test_a_file_edited_during_the_run_does_not_change_what_it_evaluates(tmp_path: Path, home: Path) -> None:
    tasks = tmp_path / "tasks"
    later = write_task(
        tasks,
        task_with(task_id="later", success_criteria=[criterion("run_command", command="true")], **AGENTLESS),
        "b.yaml",
    )
    # the pre_run asks the host to edit the other task file (a confined command cannot write it)
    ledger = Ledger(on_report=lambda _: later.write_text(later.read_text().replace("'true'", "'false'")))
    editor = task_with(
        task_id="editor",
        pre_run=[{"command": ledger.report("edit")}],
        success_criteria=[criterion("run_command", command="true")],
        **{**AGENTLESS, "sandbox": {"python": None, "network": ledger.network}},
    )
    write_task(tasks, editor, "a.yaml")
    try:
        result = run_cli("run", tasks, "--runs-dir", tmp_path / "runs", "--concurrency", "1")
    finally:
        ledger.close()
    assert "false" in later.read_text()  # the edit happened, before the scoring step
    assert result.code == 0, result.err + result.out
    document = json.loads((_only_run(tmp_path / "runs") / "run.json").read_text())
    assert {t["task_id"]: t["status"] for t in document["task_results"]} == {"editor": "SUCCESS", "later": "SUCCESS"}


def test_cli_run_metadata_names_the_paths_it_ran(tmp_path: Path, home: Path) -> None:
    write_task(tmp_path / "mine", task_with(task_id="a", **PASSING))
    assert run_cli("run", tmp_path / "mine", "--runs-dir", tmp_path / "runs").code == 0
    with dg.DagsterInstance.from_config(str(home)) as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey("task_definitions"))
        assert event is not None
        assert event.asset_materialization.metadata["task_paths"].value == str(tmp_path / "mine")  # not "tasks"


def test_launched_runs_record_the_experiment_id_like_the_cli(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", task_with(task_id="a", **PASSING))
    experiment = write(
        tmp_path / "exp.yaml", "experiment_id: exp-one\nvariants:\n  - variant_id: x\n  - variant_id: y\n"
    )
    spec = RunSpecConfig(task_paths=[str(tmp_path / "tasks")], experiment=str(experiment))
    settings = CoderEvalSettings(spec=spec, options=RunOptionsConfig(runs_dir=str(tmp_path / "runs")))
    with dg.instance_for_test() as instance:
        (request,) = sensor_tick(instance, settings, None).run_requests
        job = build_definitions(settings).resolve_job_def(JOB_NAME)
        assert job.execute_in_process(instance=instance, tags=request.tags, raise_on_error=False).success
    document = json.loads((_only_run(tmp_path / "runs") / "run.json").read_text())
    assert document["experiment"] == "exp-one"
    assert sorted(t["variant_id"] for t in document["task_results"]) == ["x", "y"]
    assert document["options"]["experiment"] == str(experiment)


def test_a_launched_run_over_one_variant_reports_that_variant_alone(tmp_path: Path) -> None:
    """A backfill of one variant's partitions: experiment.md listed the other as a variant of 0 tasks, and named
    the variant that ran best of a task the other never ran."""
    write_task(tmp_path / "tasks", task_with(task_id="a", **PASSING))
    experiment = write(tmp_path / "exp.yaml", "experiment_id: e\nvariants:\n  - variant_id: x\n  - variant_id: y\n")
    settings = folder_settings(tmp_path, "runs", experiment)
    with dg.instance_for_test() as instance:
        sensor_tick(instance, settings, None)  # registers a|x and a|y
        (request,) = tick_requests("only-x", datetime.now(UTC), rectangles([("a", "x")], ["a"], ["x", "y"]), {})
        job = build_definitions(settings).resolve_job_def(JOB_NAME)
        assert job.execute_in_process(instance=instance, tags=request.tags, raise_on_error=False).success
    run = _only_run(tmp_path / "runs")
    assert json.loads((run / "run.json").read_text())["variants"] == ["x"]
    assert not (run / "y").exists() and "[y]" not in (run / "experiment.md").read_text()


def folder_settings(folder: Path, runs: str, experiment: Path | None = None) -> CoderEvalSettings:
    """A code location serving ``folder``'s tasks (with ``experiment``), its runs in ``folder / runs``."""
    return CoderEvalSettings(
        spec=RunSpecConfig(task_paths=[str(folder / "tasks")], experiment=str(experiment) if experiment else None),
        options=RunOptionsConfig(runs_dir=str(folder / runs)),
    )


def test_a_launched_run_whose_partitions_resolve_to_nothing_fails_naming_the_cause(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", task_with(task_id="a", **AGENTLESS))
    experiment = write(tmp_path / "exp.yaml", "experiment_id: e\nvariants:\n  - variant_id: hinted\n")
    with_experiment = folder_settings(tmp_path, "runs", experiment)
    without = folder_settings(tmp_path, "r2")
    with dg.instance_for_test() as instance:
        result = sensor_tick(instance, with_experiment, None)
        apply_partition_requests(instance, result)
        job = build_definitions(without).resolve_job_def(JOB_NAME)
        outcome = job.execute_in_process(instance=instance, tags=result.run_requests[0].tags, raise_on_error=False)
    assert not outcome.success
    failure = next(e for e in outcome.all_events if e.is_step_failure)
    message = failure.step_failure_data.error.message  # type: ignore[union-attr]
    assert "none of the run's 1 partition(s)" in message and "CODER_EVAL_EXPERIMENT" in message


def test_a_chunk_of_stale_keys_goes_on_and_says_its_partitions_are_undefined(tmp_path: Path) -> None:
    """A backfill of every registered key may hold a chunk of keys the files no longer define (a removed row):
    that chunk failed, and with it the backfill's summary of its other chunks. It materializes them as
    UNDEFINED instead."""
    write_task(tmp_path / "tasks", task_with(task_id="a", **PASSING))
    gone = write_task(tmp_path / "tasks", task_with(task_id="gone", **PASSING), "gone.yaml")
    settings = folder_settings(tmp_path, "runs")
    with dg.instance_for_test() as instance:
        result = sensor_tick(instance, settings, None)
        apply_partition_requests(instance, result)
        gone.unlink()
        job = build_definitions(settings).resolve_job_def(JOB_NAME)
        key = str(partition_key("gone", "default"))
        outcome = job.execute_in_process(instance=instance, partition_key=key, raise_on_error=False)
        assert outcome.success
        event = instance.get_latest_materialization_event(dg.AssetKey("criteria_scores"))
        assert event is not None and event.asset_materialization is not None
        assert str(event.asset_materialization.metadata["status"].value).startswith("UNDEFINED")


def test_a_launched_run_over_a_folder_with_an_invalid_task_file_fails_as_the_cli_run_does(tmp_path: Path) -> None:
    """A backfill, tick or sensor run left the invalid file out of skipped_tasks and passed; the CLI fails it."""
    write_task(tmp_path / "tasks", task_with(task_id="a", **PASSING))
    broken = write_task(tmp_path / "tasks", task_with(task_id="broken", **PASSING), "broken.yaml")
    settings = folder_settings(tmp_path, "runs")
    with dg.instance_for_test() as instance:
        apply_partition_requests(instance, sensor_tick(instance, settings, None))
        broken.write_text(broken.read_text() + "bogus_field: 1\n")
        job = build_definitions(settings).resolve_job_def(JOB_NAME)
        outcome = job.execute_in_process(instance=instance, partition_key=str(partition_key("a", "default")))
        assert outcome.success
        check = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [dg.AssetCheckKey(dg.AssetKey("suite_metrics"), "all_tasks_succeeded")]
        )
        event = instance.get_latest_materialization_event(dg.AssetKey("task_definitions"))
        assert event is not None and event.asset_materialization is not None
        defined = event.asset_materialization
    document = json.loads((_only_run(tmp_path / "runs") / "run.json").read_text())
    assert document["passed"] is False and [s["path"] for s in document["skipped_tasks"]] == [str(broken)]
    (execution,) = check.values()
    assert execution.evaluation is not None and not execution.evaluation.passed
    assert execution.evaluation.metadata["invalid_task_files"].value == 1
    assert defined.metadata["invalid_file_problems"].value == 1  # the count operations.md names (it read 0)

    folder = _only_run(tmp_path / "runs")  # a launch's folder cut short is finished in Dagster, not by --resume
    (folder / "default" / "a" / "00" / "task.json").unlink()
    refused = run_cli("report", folder, "--rebuild")
    assert refused.code == 2 and "finish it first in Dagster: re-execute its failed runs" in refused.err, refused.err
    assert f"coder_eval/run_folder={folder.name}" in refused.err


def test_an_empty_selection_exits_2_saying_what_was_left_out(tmp_path: Path, home: Path) -> None:
    write_task(tmp_path / "tasks", task_with(task_id="a", tags=["smoke"], **AGENTLESS))
    result = run_cli("run", tmp_path / "tasks", "--tags", "nosuchtag", "--runs-dir", tmp_path / "runs")
    assert result.code == 2
    assert "no row-tasks selected" in result.err and "1 tasks without the tags nosuchtag" in result.err
    assert not (tmp_path / "runs").exists() or not any(
        p.name != "tables" and p.is_dir() for p in (tmp_path / "runs").iterdir()
    )


def test_durations_are_each_evaluations_own_and_rescore_keeps_them(tmp_path: Path, home: Path) -> None:
    naps = {f"nap{i}": 1.0 + 1.0 * (i % 2) for i in range(6)}  # a worker's three: its stage, 4 s at least
    for task_id, nap in naps.items():
        write_task(
            tmp_path / "tasks",
            task_with(task_id=task_id, pre_run=[{"command": f"sleep {nap}"}], **PASSING),
            f"{task_id}.yaml",
        )
    assert run_cli("run", tmp_path / "tasks", "--runs-dir", tmp_path / "runs", "--concurrency", "2").code == 0
    run_dir = _only_run(tmp_path / "runs")
    document = json.loads((run_dir / "run.json").read_text())
    by_task = {t["task_id"]: t for t in document["task_results"]}
    for task_id, nap in naps.items():
        entry = by_task[task_id]
        # its own nap, and what its first command pays (a namespace started on a loaded machine): never the
        # stage's whole time, three naps a worker
        assert nap <= entry["stage_durations"]["pre_run"] < nap + 1.0
        assert entry["duration"] == pytest.approx(sum(entry["stage_durations"].values()), abs=0.01)
        assert entry["duration"] < nap + 1.8  # its own time, not the whole stage's
    tables = tmp_path / "runs" / "tables"
    before = pd.read_parquet(tables / "task_results").set_index("task_id")["duration_s"].to_dict()
    assert run_cli("rescore", run_dir).code == 0
    after = json.loads((run_dir / "run.json").read_text())
    assert {t["task_id"]: t["duration"] for t in after["task_results"]} == {
        t: e["duration"] for t, e in by_task.items()
    }
    assert pd.read_parquet(tables / "task_results").set_index("task_id")["duration_s"].to_dict() == before
    task_json = json.loads((run_dir / "default/nap0/00/task.json").read_text())
    assert task_json["rescore_duration_s"] is not None and task_json["rescored_at"]


def test_progress_advances_per_stage_for_each_evaluation(tmp_path: Path) -> None:
    from coder_eval_dagster.core.evaluation import evaluate, new_evaluation
    from coder_eval_dagster.core.run_context import RunContext
    from coder_eval_dagster.core.run_spec import RunSpec

    write_task(tmp_path, task_with(task_id="a", dataset={"rows": [{"id": "1"}, {"id": "2"}]}, **AGENTLESS))
    events: list[tuple[str, str]] = []
    context = RunContext.create(progress=lambda event, info: events.append((info["task_id"], info["stage"])))
    for row_task in resolution.resolve(RunSpec(task_paths=[str(tmp_path)])).row_tasks:
        evaluate(new_evaluation("r", tmp_path / "run", row_task, 1, None, context))
    stages = ["setup", "pre_run", "agent", "score", "post_run", "decide", "finish"]
    assert events == [("a/1", s) for s in stages] + [("a/2", s) for s in stages]


class Mood(Classification):
    """A classification criterion defined outside the package: the label written to mood.txt."""

    type: Literal["mood"]
    expected_mood: str

    def label_space(self) -> list[str]:
        return ["happy", "sad"]

    def expected(self) -> str:
        return self.expected_mood


@pytest.fixture
def mood_registered():
    @checks(Mood)
    def check(criterion: Mood, ctx) -> Outcome:
        observed = ctx.read_text("mood.txt")[0].strip()
        return Outcome(
            float(observed == criterion.expected_mood), expected_label=criterion.expected_mood, observed_label=observed
        )

    yield
    unregister("mood")


def test_a_criterion_registered_from_outside_validates_scores_and_reaches_the_suite(
    tmp_path: Path, home: Path, mood_registered: None
) -> None:
    rows = [{"id": "1", "mood": "happy"}, {"id": "2", "mood": "sad"}]
    task = task_with(
        task_id="moods",
        dataset={"rows": rows},
        pre_run=[{"command": "echo happy > mood.txt"}],
        success_criteria=[
            {
                "type": "mood",
                "description": "the mood",
                "expected_mood": "${row.mood}",
                "suite_thresholds": {"accuracy": 0.5},
            }
        ],
        **AGENTLESS,
    )
    write_task(tmp_path / "tasks", task)
    assert run_cli("validate", tmp_path / "tasks").code == 0
    result = run_cli("run", tmp_path / "tasks", "--runs-dir", tmp_path / "runs")
    assert result.code == 1  # the sad row fails; the suite threshold is met
    document = json.loads((_only_run(tmp_path / "runs") / "run.json").read_text())
    assert {t["task_id"]: t["status"] for t in document["task_results"]} == {"moods/1": "SUCCESS", "moods/2": "FAILURE"}
    (entry,) = document["suite"]
    assert entry["criterion_type"] == "mood" and entry["metrics"]["accuracy"] == 0.5
    assert entry["confusion_matrix"] == {"happy": {"happy": 1}, "sad": {"happy": 1}}
    assert entry["thresholds"][0]["passed"] is True


def test_an_unregistered_type_is_refused_again(tmp_path: Path) -> None:
    task = task_with(
        task_id="m", success_criteria=[{"type": "mood", "description": "d", "expected_mood": "x"}], **AGENTLESS
    )
    result = run_cli("validate", write_task(tmp_path, task))
    assert result.code == 1 and "success_criteria.0" in result.err


def test_limit_task_globs_model_and_version(tmp_path: Path) -> None:
    rows = [{"id": f"add-{i}"} for i in range(4)] + [{"id": f"sub-{i}"} for i in range(3)]
    write_task(tmp_path, task_with(task_id="arith", dataset={"rows": rows}, **PASSING))
    listed = run_cli("list", tmp_path, "--task", "arith/add-*")
    assert listed.out.split() == [
        "default",
        "arith/add-0",
        "default",
        "arith/add-1",
        "default",
        "arith/add-2",
        "default",
        "arith/add-3",
    ]
    limited = run_cli("list", tmp_path, "--task", "arith/add-*", "--task", "arith/sub-2", "--limit", "3")
    assert limited.out.split()[1::2] == ["arith/add-0", "arith/add-1", "arith/add-2"]  # the first N, deterministic
    assert run_cli("list", tmp_path, "--limit", "2").out == run_cli("list", tmp_path, "--limit", "2").out

    from coder_eval_dagster.core.run_spec import RunSpec

    (row_task, *_) = resolution.resolve(RunSpec(task_paths=[str(tmp_path)], model="claude-opus-4-7")).row_tasks
    assert row_task.task.agent.model == "claude-opus-4-7"  # --model is -D agent.model
    version = run_cli_version()
    assert version.startswith("coder-eval ") and version.split()[1][0].isdigit()


def test_limit_and_task_globs_count_row_tasks_under_every_variant(tmp_path: Path) -> None:
    """``--limit N`` keeps the first N row-tasks, each under every variant: an A/B run still has its arms."""
    rows = [{"id": f"r{i}"} for i in range(3)]
    task = write_task(tmp_path, task_with(task_id="t", dataset={"rows": rows}, **PASSING))
    experiment = write(
        tmp_path / "ab.yaml",
        f"experiment_id: ab\ntasks: [{task.name}]\nvariants: [{{variant_id: v1}}, {{variant_id: v2}}]\n",
    )
    limited = run_cli("list", "-e", experiment, "--limit", "2")
    assert limited.out.split() == ["v1", "t/r0", "v1", "t/r1", "v2", "t/r0", "v2", "t/r1"]
    from coder_eval_dagster.core.run_spec import RunSpec

    resolved = resolution.resolve(RunSpec(experiment=str(experiment), limit=1, task_patterns=["t/r[01]"]))
    assert resolved.filtered == {"row-tasks not matching --task t/r[01]": 1, "row-tasks beyond --limit 1": 1}
    assert [(rt.variant_id, rt.task_id) for rt in resolved.row_tasks] == [("v1", "t/r0"), ("v2", "t/r0")]


def run_cli_version() -> str:
    import contextlib
    import io

    from coder_eval_dagster.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    return out.getvalue().strip()
