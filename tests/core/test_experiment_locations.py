"""What an experiment names is found relative to the experiment file, and a problem its values cause is named there.

A variant's or the defaults' template folder and local repo are looked for
beside the experiment file (never beside each task), a trajectory beside each
task (CONTRACT 5); a folder that is missing is the experiment's problem, said
once, even with no task; a problem
the defaults cause is said at their line; a repo source an experiment adds
after a task's own sources says why it is not first; ``-D`` names where a moved
cap lives now.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from coder_eval_dagster.core.problems import Problem
from coder_eval_dagster.core.resolution import Resolution, resolve
from coder_eval_dagster.core.run_spec import RunSpec
from coder_eval_dagster.core.sandbox.templates import repo_location

from ..support.helpers import agentless_task, run_cli, write, write_task

WRITES_X = [{"tool": "Write", "path": "x.txt", "content": "a"}]


def _replay_tasks(folder: Path, *task_ids: str) -> list[Path]:
    """Replay tasks playing ``a.yaml`` beside them (it writes x.txt), and that trajectory."""
    write(folder / "a.yaml", yaml.safe_dump({"turns": [{"calls": WRITES_X}]}))
    criteria = [{"type": "file_exists", "path": "x.txt", "description": "x"}]
    return [
        write_task(
            folder,
            {
                "task_id": task_id,
                "description": "d",
                "agent": {"type": "replay", "trajectory": "a.yaml"},
                "sandbox": {"python": None},
                "success_criteria": criteria,
            },
            f"{task_id}.yaml",
        )
        for task_id in task_ids
    ]


def _experiment(path: Path, data: dict[str, Any]) -> Path:
    return write(path, yaml.safe_dump(data, sort_keys=False))


def _trajectories(resolution: Resolution) -> dict[tuple[str, str], str | None]:
    return {(rt.variant_id, rt.task_id): rt.task.agent.trajectory for rt in resolution.row_tasks}


def test_a_variants_trajectory_is_each_tasks_own_as_the_contract_says(tmp_path: Path) -> None:
    """CONTRACT 5: FILE relative to the task YAML, also from an experiment: one variant replays each task's own
    recorded session beside it."""
    _replay_tasks(tmp_path / "tasks", "t", "u")
    write(tmp_path / "tasks/b.yaml", yaml.safe_dump({"turns": [{"calls": WRITES_X}]}))
    variants = [{"variant_id": "one"}, {"variant_id": "two", "agent": {"trajectory": "b.yaml"}}]
    experiment = _experiment(
        tmp_path / "exps/e.yaml",
        {"experiment_id": "e", "tasks": ["../tasks/t.yaml", "../tasks/u.yaml"], "variants": variants},
    )
    done = run_cli("validate", experiment)
    assert (done.code, done.err) == (0, ""), done.err
    resolution = resolve(RunSpec(experiment=str(experiment)))
    assert not resolution.problems
    played = _trajectories(resolution)
    assert played[("two", "t")] == played[("two", "u")] == "b.yaml"  # read beside each task
    assert played[("one", "t")] == "a.yaml"


def test_the_defaults_trajectory_is_each_tasks_own(tmp_path: Path) -> None:
    (task,) = _replay_tasks(tmp_path / "tasks", "t")
    write(tmp_path / "tasks/b.yaml", yaml.safe_dump({"turns": [{"calls": WRITES_X}]}))
    data = yaml.safe_load(task.read_text())
    del data["agent"]["trajectory"]  # the defaults give it
    write_task(tmp_path / "tasks", data, "t.yaml")
    experiment = _experiment(
        tmp_path / "exps/e.yaml",
        {"experiment_id": "e", "defaults": {"agent": {"trajectory": "b.yaml"}}, "variants": [{"variant_id": "v"}]},
    )
    done = run_cli("validate", task, "-e", experiment)
    assert (done.code, done.err) == (0, ""), done.err
    resolution = resolve(RunSpec(task_paths=[str(task)], experiment=str(experiment)))
    assert _trajectories(resolution) == {("v", "t"): "b.yaml"}


def test_a_variants_trajectory_missing_beside_a_task_is_said_at_its_line_naming_the_task(tmp_path: Path) -> None:
    _replay_tasks(tmp_path / "tasks", "t", "u")
    write(tmp_path / "exps/nothere.yaml", yaml.safe_dump({"turns": [{"calls": WRITES_X}]}))  # not where it is read
    experiment = write(
        tmp_path / "exps/e.yaml",
        """\
        experiment_id: e
        tasks: ["../tasks/t.yaml", "../tasks/u.yaml"]
        variants:
          - variant_id: one
          - variant_id: two
            agent: {trajectory: nothere.yaml}
        """,
    )
    done = run_cli("validate", experiment)
    assert done.code == 1
    lines = done.err.splitlines()
    assert len(lines) == 2 and all(
        line.startswith(f"{experiment}:6: variants.1.agent.trajectory: file not found: nothere.yaml") for line in lines
    ), done.err
    assert lines[0].endswith("tasks/t.yaml)") and lines[1].endswith("tasks/u.yaml)")  # which task's folder


def test_a_defaults_hook_is_blamed_on_the_defaults_not_the_task(tmp_path: Path) -> None:
    task = write_task(tmp_path / "t", agentless_task(pre_run=[{"command": "echo own"}]))
    experiment = write(
        tmp_path / "e/exp.yaml",
        """\
        experiment_id: hooks
        defaults:
          pre_run:
            - command: "echo ${row.v}"
        variants: [{variant_id: v}]
        """,
    )
    done = run_cli("validate", task, "-e", experiment)
    assert done.code == 1
    assert done.err.splitlines() == [
        f"{experiment}:4: defaults.pre_run.0.command: ${{row.…}} needs a dataset: this task has none "
        f"(under the task {task})"
    ]


def test_a_value_the_task_sets_itself_stays_the_tasks(tmp_path: Path) -> None:
    task = write_task(tmp_path / "t", {**agentless_task(), "agent": {"type": "none", "trajectory": "a.yaml"}})
    write(tmp_path / "t/a.yaml", yaml.safe_dump({"turns": [{"calls": WRITES_X}]}))
    write(tmp_path / "e/b.yaml", yaml.safe_dump({"turns": [{"calls": WRITES_X}]}))
    experiment = _experiment(
        tmp_path / "e/exp.yaml",
        {"experiment_id": "x", "defaults": {"agent": {"trajectory": "b.yaml"}}, "variants": [{"variant_id": "v"}]},
    )
    done = run_cli("validate", task, "-e", experiment)
    assert done.code == 1
    assert done.err.startswith(f"{task}:"), done.err
    assert "agent.trajectory: only allowed with type replay, not none" in done.err


def test_a_missing_template_folder_is_found_when_the_experiment_is_validated_alone(tmp_path: Path) -> None:
    experiment = write(
        tmp_path / "e/exp.yaml",
        """\
        experiment_id: e3
        variants:
          - variant_id: a
            template_sources: [{type: template_dir, path: nodir}]
        """,
    )
    done = run_cli("validate", experiment)
    assert done.code == 1
    assert done.err.splitlines() == [
        f"{experiment}:4: variants.0.template_sources.0.path: folder not found: {(tmp_path / 'e/nodir').resolve()} "
        "(relative to the experiment file)"
    ]


def test_a_template_folder_found_beside_the_experiment_is_ok(tmp_path: Path) -> None:
    (tmp_path / "e/there").mkdir(parents=True)
    experiment = write(
        tmp_path / "e/exp.yaml",
        "experiment_id: e3\nvariants:\n  - variant_id: a\n    template_sources: [{type: template_dir, path: there}]\n",
    )
    assert run_cli("validate", experiment).code == 0


def _git_repo(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "hello.txt").write_text(text)
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "i"]):
        git = ["git", "-c", "user.email=a@b", "-c", "user.name=n", *command]
        subprocess.run(git, cwd=folder, check=True, capture_output=True, timeout=60)
    return folder


def test_a_variants_relative_repo_is_the_one_beside_the_experiment(tmp_path: Path) -> None:
    beside = _git_repo(tmp_path / "e/repo", "experiment's\n")
    _git_repo(tmp_path / "t/repo", "task's\n")  # the same name beside the task: not the one meant
    task = write_task(tmp_path / "t", agentless_task())
    experiment = write(
        tmp_path / "e/exp.yaml",
        "experiment_id: e5\nvariants:\n  - variant_id: a\n    template_sources: [{type: repo, url: repo}]\n",
    )
    resolution = resolve(RunSpec(task_paths=[str(task)], experiment=str(experiment)))
    assert not resolution.problems
    (row_task,) = resolution.row_tasks
    (source,) = row_task.task.sandbox.template_sources
    assert source.type == "repo"
    assert repo_location(source.url, row_task.task_dir) == str(beside.resolve())


def test_a_variants_missing_relative_repo_is_the_experiments_problem(tmp_path: Path) -> None:
    experiment = write(
        tmp_path / "e/exp.yaml",
        "experiment_id: e5\nvariants:\n  - variant_id: a\n    template_sources: [{type: repo, url: repo}]\n",
    )
    done = run_cli("validate", experiment)
    assert done.code == 1
    assert done.err.startswith(f"{experiment}:4: variants.0.template_sources.0.url: folder not found: ")


@pytest.mark.parametrize("url", ["https://example.com/r.git", "git@example.com:org/r.git", "/abs/r"])
def test_a_remote_or_absolute_repo_url_is_left_as_written(tmp_path: Path, url: str) -> None:
    task = write_task(tmp_path / "t", agentless_task())
    experiment = _experiment(
        tmp_path / "e/exp.yaml",
        {"experiment_id": "r", "variants": [{"variant_id": "a", "template_sources": [{"type": "repo", "url": url}]}]},
    )
    resolution = resolve(RunSpec(task_paths=[str(task)], experiment=str(experiment)))
    assert not resolution.problems
    assert resolution.row_tasks[0].task.sandbox.template_sources[0].url == url


STARTER = [{"type": "starter_files", "files": [{"path": "a.txt", "content": "a"}]}]


@pytest.mark.parametrize(
    ("layer", "line", "field", "why"),
    [
        (
            "variants:\n  - variant_id: a\n    template_sources: [{type: repo, url: repo}]\n",
            4,
            "variants.0.template_sources.0",
            "a variant's template_sources come after the task's own, then the defaults'",
        ),
        (
            "defaults:\n  template_sources: [{type: repo, url: repo}]\nvariants: [{variant_id: a}]\n",
            3,
            "defaults.template_sources.0",
            "the defaults' template_sources come after the task's",
        ),
    ],
)
def test_a_repo_an_experiment_adds_after_a_tasks_sources_says_why(
    tmp_path: Path, layer: str, line: int, field: str, why: str
) -> None:
    _git_repo(tmp_path / "e/repo", "r\n")
    task = write_task(tmp_path / "t", agentless_task(sandbox={"python": None, "template_sources": STARTER}))
    experiment = write(tmp_path / "e/exp.yaml", f"experiment_id: e4\n{layer}")
    done = run_cli("validate", task, "-e", experiment)
    assert done.code == 1
    assert done.err.splitlines() == [
        f"{experiment}:{line}: {field}: a repo source must be first in the list, and {why}: under the task {task}, "
        "after 1 source"
    ]


@pytest.mark.parametrize(
    ("key", "home"), [("agent.max_turns", "run_limits.max_turns"), ("task_timeout", "run_limits.task_timeout")]
)
def test_a_moved_cap_given_with_d_names_its_new_home(tmp_path: Path, key: str, home: str) -> None:
    task = write_task(tmp_path, agentless_task())
    done = run_cli("list", task, "-D", f"{key}=3")
    assert done.code != 0
    assert done.err.strip() == f"-D: {key}: no longer supported here; it lives under {home} (-D {home}=...)"


def test_a_problem_a_named_file_shares_with_a_skipped_folder_file_stays() -> None:
    shared = Problem("e.yaml", 3, "variants.0.agent.trajectory", "file not found")
    own = Problem("dir/a.yaml", 1, "task_id", "bad")
    resolution = Resolution()
    resolution.add_problems([shared, own], "dir/a.yaml")  # a task file found in a folder
    resolution.add_problems([shared])  # a task file named on the command line
    assert resolution.problems == [shared, own]  # each said once
    resolution.skip_invalid_folder_files()
    assert resolution.problems == [shared]
    assert [skipped.path for skipped in resolution.skipped] == ["dir/a.yaml"]


def test_a_problem_only_folder_files_share_goes_with_them() -> None:
    shared = Problem("e.yaml", 3, "variants.0.agent.trajectory", "file not found")
    resolution = Resolution()
    resolution.add_problems([shared], "dir/a.yaml")
    resolution.add_problems([shared], "dir/b.yaml")
    assert resolution.problems == [shared]
    resolution.skip_invalid_folder_files()
    assert resolution.problems == []
    assert sorted(skipped.path for skipped in resolution.skipped) == ["dir/a.yaml", "dir/b.yaml"]
