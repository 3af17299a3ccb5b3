"""The run as a value, resolved once (issue 14's acceptance sweep): task.json records the task file the run read,
a command-line value's problems are the option's for files found in a folder too, ``--task`` with a dataset task's
id says how to select its rows, and ``run`` and ``register`` record the same task_definitions metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli

pytestmark = pytest.mark.slow

ROWS = """\
task_id: tt
description: two rows
agent: {type: none}
sandbox: {python: null}
dataset: {rows: [{id: a}, {id: b}]}
pre_run: [{command: "echo v1 > ver.txt"}]
success_criteria: [{type: file_contains, path: ver.txt, includes: [v1], description: the version}]
"""


def test_task_json_records_the_task_file_the_run_read_not_the_one_on_disk_at_the_end(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    task = write(tmp_path / "tasks/tt.yaml", ROWS)
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    assert run.result("tt/a")["task_config"]["source_yaml"] == ROWS
    for edit in (lambda: task.write_text(ROWS.replace("v1", "v2"), encoding="utf-8"), task.unlink):
        (run.evaluation("tt/b") / "task.json").unlink()  # run again by the resume
        edit()
        resumed = system_cli("run", "--resume", run.path, env={})
        assert resumed.code == 0, resumed.output  # the snapshot's criterion: v1
        config = run.result("tt/b")["task_config"]
        assert config["source_yaml"] == ROWS, config["source_yaml"]
        assert config["resolved"]["success_criteria"][0]["includes"] == ["v1"]


DATASET = """\
task_id: ds
description: dataset task
agent: {type: none}
sandbox: {python: null}
dataset: {rows: [{id: r1}, {id: r2}]}
success_criteria: [{type: file_exists, path: ., description: here}]
"""
REPLAY = """\
task_id: rp
description: a replay
initial_prompt: go
agent: {type: replay, trajectory: traj.yaml}
sandbox: {python: null}
success_criteria: [{type: file_exists, path: out.txt, description: written}]
"""
TRAJECTORY = "turns:\n  - calls:\n      - {tool: Write, path: out.txt, content: hi}\n    text: done\n"


def _folder(tmp_path: Path) -> Path:
    write(tmp_path / "t/ds.yaml", DATASET)
    write(tmp_path / "t/rp.yaml", REPLAY)
    write(tmp_path / "t/traj.yaml", TRAJECTORY)
    return tmp_path / "t"


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (("--type", "replay"), "--type: agent.trajectory: type replay requires a trajectory file (with --type replay)"),
        (
            ("-D", "agent.type=none"),
            "-D: agent.trajectory: only allowed with type replay, not none (with -D agent.type=none)",
        ),
    ],
)
def test_a_command_line_value_breaking_a_folders_file_is_the_options_problem(
    tmp_path: Path, system_cli: SystemCli, options: tuple[str, ...], said: str
) -> None:
    _folder(tmp_path)
    for command in (("list",), ("run", "--runs-dir", "runs")):
        outcome = system_cli(*command, "t", *options, env={})
        assert outcome.code == 2, outcome.output
        assert said in outcome.err and "(in t/" in outcome.err, outcome.err
        assert "skipped" not in outcome.err and outcome.out == "", outcome.output  # nothing runs, nothing listed
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_file_invalid_without_the_options_too_keeps_its_own_problems(tmp_path: Path, system_cli: SystemCli) -> None:
    folder = _folder(tmp_path)
    write(folder / "bad.yaml", DATASET.replace("task_id: ds", "task_id: bad").replace("file_exists", "no_such_type"))
    outcome = system_cli("list", "t", "--model", "m", env={})
    assert outcome.code == 1, outcome.output  # the file's problem: skipped, the rest listed
    assert "skipped t/bad.yaml" in outcome.err and "default ds/r1" in outcome.out, outcome.output


def test_a_file_with_a_problem_of_its_own_still_has_the_options_problem_named(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """Attributed only when the file was valid without the options, a problem a value brought about in a file with
    a problem of its own was said as the file's, at a line that does not hold it, and the file skipped."""
    folder = _folder(tmp_path)
    write(folder / "own.yaml", REPLAY.replace("task_id: rp", "task_id: own") + "tags: smoke\n")
    outcome = system_cli("list", "t", "-D", "agent.type=none", env={})
    assert outcome.code == 2, outcome.output
    assert "-D: agent.trajectory: only allowed with type replay, not none (with -D agent.type=none)" in outcome.err
    assert "(in t/own.yaml and t/rp.yaml)" in outcome.err and outcome.out == "", outcome.output


def test_task_with_a_dataset_tasks_own_id_says_how_to_select_its_rows(tmp_path: Path, system_cli: SystemCli) -> None:
    outcome = system_cli("list", _folder(tmp_path), "--task", "ds", env={})
    assert "--task 'ds/*' selects its rows" in outcome.err, outcome.output
    assert system_cli("list", _folder(tmp_path), "--task", "rp", env={}).out == "default rp\n"


def _definitions(system_cli: SystemCli) -> dict[str, object]:
    import dagster as dg

    with dg.DagsterInstance.from_config(str(system_cli.home)) as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey("task_definitions"))
        assert event is not None and event.asset_materialization is not None
        return {name: value.value for name, value in event.asset_materialization.metadata.items()}


def test_run_and_register_record_the_same_task_definitions_metadata(tmp_path: Path, system_cli: SystemCli) -> None:
    """Row-tasks and variants counted apart, and the task paths read (an experiment's own too), by either."""
    _folder(tmp_path)
    write(tmp_path / "exp.yaml", "experiment_id: e\ntasks: [t/ds.yaml]\nvariants: [{variant_id: a}, {variant_id: b}]\n")
    registered = system_cli("register", "-e", "exp.yaml", env={})
    assert "registered 2 row-task(s) x 2 variant(s)" in registered.out, registered.output
    by_register = _definitions(system_cli)
    outcome = system_cli("run", "-e", "exp.yaml", "--runs-dir", "runs", env={})
    assert outcome.code == 0, outcome.output
    by_run = _definitions(system_cli)
    shared = ("row_tasks", "variants", "skipped", "task_paths", "experiment")
    assert {name: by_run[name] for name in shared} == {name: by_register[name] for name in shared}
    assert (by_run["row_tasks"], by_run["variants"], by_run["task_paths"]) == (2, 2, "t/ds.yaml"), by_run


def test_a_resume_names_only_the_row_tasks_that_read_the_changed_files_again(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    task = write(
        tmp_path / "tasks/tt.yaml",
        ROWS.replace(
            "sandbox: {python: null}", "sandbox: {python: null, template_sources: [{type: template_dir, path: tpl}]}"
        ),
    )
    write(tmp_path / "tasks/tpl/ver.txt", "v1\n")
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    for row in ("a", "b"):
        (run.evaluation(f"tt/{row}") / "task.json").unlink()
    (run.evaluation("tt/a") / "task.html").unlink()  # cut short while scoring: its checkpoint kept, only scored again
    write(tmp_path / "tasks/tpl/ver.txt", "v2\n")
    resumed = system_cli("run", "--resume", run.path, env={})
    said = "note: 1 row-task(s) to run read files that changed since the run started"
    assert said in resumed.err and "they run with them as they are now: tt/b [default]\n" in resumed.err, resumed.err
