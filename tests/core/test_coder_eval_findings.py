"""The smaller findings of a coder_eval user's walk (issue 33, item 4), each as the user meets it."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_eval_dagster.core.resolution import resolve
from coder_eval_dagster.core.run_spec import RunSpec

from ..support.helpers import criterion, run_cli, task_with, write, write_task


def _errors(path: Path) -> list[str]:
    result = run_cli("validate", path)
    assert result.code == 1, result.out
    return result.err.splitlines()


def test_did_you_mean_suggests_from_the_right_block_and_never_the_rejected_name(tmp_path: Path) -> None:
    task = write(
        tmp_path / "t.yaml",
        """
        task_id: x
        description: d
        initial_prompt: p
        sandbox: {env_packages: [pytest]}
        dataset: {path: rows.jsonl}
        success_criteria:
          - {type: file_exists, path: a, description: d, includes: [x]}
        timeout: 60
        """,
    )
    errors = _errors(task)
    assert (
        f"{task}:5: sandbox.env_packages: unknown field (not part of the format) "
        "(did you mean `sandbox.python.env_packages`?)" in errors
    )
    assert f"{task}:6: dataset.path: unknown field (not part of the format) (did you mean `paths`?)" in errors
    # `includes` belongs to file_contains, not to this file_exists: no suggestion from another block
    assert f"{task}:8: success_criteria.0.includes: unknown field (not part of the format)" in errors
    assert not any("did you mean `env_packages`" in e or "did you mean `path`?" in e for e in errors)
    # a criterion's `timeout` is no place for a task's: `success_criteria.timeout` names no field
    assert f"{task}:9: timeout: unknown field (not part of the format)" in errors


def test_every_removed_field_of_a_block_is_reported(tmp_path: Path) -> None:
    task = write_task(tmp_path, task_with(agent={"max_turns": 5, "turn_timeout": 60, "task_timeout": 600}))
    assert [error.split(": ", 1)[1] for error in _errors(task)] == [
        f"agent.{name}: no longer supported here; it lives under run_limits.{name}"
        for name in ("max_turns", "turn_timeout", "task_timeout")
    ]


def test_a_missing_dataset_file_is_said_once_without_false_row_follow_ons(tmp_path: Path) -> None:
    task = write_task(
        tmp_path,
        task_with(
            initial_prompt="classify ${row.text}",
            dataset={"paths": ["missing.jsonl"]},
            success_criteria=[
                criterion("run_command", command="test ${row.n} -ge 0", timeout="${row.timeout}"),
                criterion("file_exists", path="out.txt"),
            ],
        ),
    )
    assert _errors(task) == [
        f"{task}:14: dataset.paths.0: file not found: missing.jsonl (relative to the task YAML)",
    ]


def test_a_folder_skips_a_yaml_that_is_not_a_task_and_an_invalid_task_file(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", task_with(task_id="good", tags=["smoke"]), "good.yaml")
    write(tmp_path / "tasks/reference_flows/a/metadata.yaml", "name: flow a\nsteps: 3\n")
    write(tmp_path / "tasks/notes.yaml", "- just\n- a list\n")
    write_task(tmp_path / "tasks", task_with(task_id="broken", success_criteria=[]), "broken.yaml")
    resolution = resolve(RunSpec(task_paths=[str(tmp_path / "tasks")], tags=["smoke"]))
    assert [rt.task_id for rt in resolution.row_tasks] == ["good"]
    assert [str(w) for w in resolution.warnings] == [
        f"note: skipped, not a task file (no task_id): {tmp_path / 'tasks/notes.yaml'}",
        f"note: skipped, not a task file (no task_id): {tmp_path / 'tasks/reference_flows/a/metadata.yaml'}",
    ]
    assert [p.path for p in resolution.problems] == [str(tmp_path / "tasks/broken.yaml")]
    resolution.skip_invalid_folder_files()
    (skipped,) = resolution.skipped
    assert (skipped.path, skipped.invalid) == (str(tmp_path / "tasks/broken.yaml"), True)
    assert "success_criteria: List should have at least 1 item" in skipped.reason and resolution.problems == []


def test_a_folder_passes_over_the_experiment_the_run_lays_under_its_tasks_in_silence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run .`` with experiments/default.yaml: it is the run's base layer, applied; "pass it with -e" was wrong."""
    monkeypatch.chdir(tmp_path)
    write_task(tmp_path / "tasks", task_with(task_id="good"), "good.yaml")
    base = "experiment_id: default\nvariants: [{variant_id: default}]\n"
    write(tmp_path / "experiments/default.yaml", base)
    write(tmp_path / "experiments/other.yaml", base.replace("default", "other"))
    resolution = resolve(RunSpec(task_paths=["."]))
    assert [rt.task_id for rt in resolution.row_tasks] == ["good"] and resolution.experiment is not None
    assert [str(w) for w in resolution.warnings] == [
        "note: skipped, an experiment file (pass it with -e): experiments/other.yaml"
    ]


def test_a_file_named_directly_is_still_refused_whole(tmp_path: Path) -> None:
    metadata = write(tmp_path / "metadata.yaml", "name: flow a\n")
    broken = write_task(tmp_path, task_with(task_id="broken", success_criteria=[]), "broken.yaml")
    resolution = resolve(RunSpec(task_paths=[str(metadata), str(broken)]))
    resolution.skip_invalid_folder_files()
    assert resolution.skipped == [] and {p.path for p in resolution.problems} == {str(metadata), str(broken)}


def test_list_of_a_folder_runs_the_rest_and_fails(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(task_id="good"), "good.yaml")
    write(tmp_path / "flows/metadata.yaml", "name: flow a\n")
    write_task(tmp_path, task_with(task_id="broken", success_criteria=[]), "broken.yaml")
    listed = run_cli("list", tmp_path)
    assert listed.code == 1 and listed.out == "default good\n"
    assert f"note: skipped, not a task file (no task_id): {tmp_path / 'flows/metadata.yaml'}" in listed.err
    broken = str(tmp_path / "broken.yaml")
    assert f"skipped {broken}:4: success_criteria" in listed.err and listed.err.count(broken) == 1  # said once


def test_validate_of_a_folder_notes_a_yaml_that_is_not_a_task(tmp_path: Path) -> None:
    write_task(tmp_path, task_with(task_id="good"), "good.yaml")
    metadata = write(tmp_path / "flows/metadata.yaml", "name: flow a\n")
    folder = run_cli("validate", tmp_path)
    assert folder.code == 0 and folder.out == f"OK {tmp_path / 'good.yaml'}\n"
    assert folder.err == f"note: skipped, not a task file (no task_id): {metadata}\n"
    named = run_cli("validate", metadata)  # named on its own, it is judged as a task file
    assert named.code == 1 and "task_id: Field required" in named.err


def test_an_empty_override_value_clears_the_field_as_coder_evals_does() -> None:
    """coder_eval reads ``-D run_limits.max_turns=`` with ``yaml.safe_load('')``: None, the cap cleared."""
    from coder_eval_dagster.core.resolution import parse_override

    assert parse_override("run_limits.max_turns=") == (("run_limits", "max_turns"), None)
    assert parse_override("agent.model= ") == (("agent", "model"), None)
    assert parse_override("tags=[]") == (("tags",), [])


def test_a_mapping_override_merges_per_key_as_the_docs_say(tmp_path: Path) -> None:
    """``-D 'run_limits={turn_timeout: 12}'`` dropped the task's other caps (task_timeout) without a word."""
    from coder_eval_dagster.core.resolution import resolve
    from coder_eval_dagster.core.run_spec import RunSpec

    task = write_task(tmp_path, task_with(run_limits={"task_timeout": 50, "max_turns": 7}))
    spec = RunSpec(task_paths=[str(task)], overrides=["run_limits={turn_timeout: 12}", "run_limits.max_turns=3"])
    (row_task,) = resolve(spec).row_tasks
    limits = row_task.task.run_limits
    assert (limits.task_timeout, limits.turn_timeout, limits.max_turns) == (50, 12, 3)
