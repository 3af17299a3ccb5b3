"""Resolution findings of the dataset sweep: skip before the dataset, a folder task's dataset problems are its own,
a dialog's repeats, a variant's problems at its line, an experiment recognised without its id, a missing task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.problems import Problem
from coder_eval_dagster.core.resolution import SKIP_TRUE, SkippedTask, resolve
from coder_eval_dagster.core.run_spec import RunSpec

from ..support.helpers import run_cli, task_with, write, write_task

TRAJECTORY = "turns:\n  - calls: []\n    text: done\n"
ROW_CRITERION = {"type": "file_exists", "path": "${row.v}.txt", "description": "row file"}


def _dataset_task(folder: Path, name: str, dataset: dict[str, Any], **changes: Any) -> Path:
    data = task_with(task_id=name, success_criteria=[ROW_CRITERION], dataset=dataset, **changes)
    return write_task(folder, data, f"{name}.yaml")


def test_a_skipped_task_never_reads_its_dataset(tmp_path: Path) -> None:
    task = _dataset_task(tmp_path, "parked", {"paths": ["missing.jsonl"]}, skip=True)
    result = resolve(RunSpec(task_paths=[str(task)]))
    assert (result.problems, result.skipped) == ([], [SkippedTask(str(task), SKIP_TRUE, task_id="parked")])
    included = resolve(RunSpec(task_paths=[str(task)], include_skipped=True))
    assert [p.field for p in included.problems] == ["dataset.paths.0"]


def test_a_skipped_task_is_still_checked_as_a_task_file(tmp_path: Path) -> None:
    task = _dataset_task(tmp_path, "parked", {"paths": ["missing.jsonl"]}, skip=True, timeout_s=3)
    result = resolve(RunSpec(task_paths=[str(task)]))
    assert [p.field for p in result.problems] == ["timeout_s"] and result.skipped == []


BROKEN_DATASETS: dict[str, tuple[dict[str, Any], str | None]] = {
    "malformed jsonl line": ({"paths": ["rows.jsonl"]}, '{"id": "r1", "v": 1}\n{"id": "r2", "v": }\n'),
    "jsonl duplicate id": ({"paths": ["rows.jsonl"]}, '{"id": "r1", "v": 1}\n{"id": "r1", "v": 2}\n'),
    "missing jsonl": ({"paths": ["nope.jsonl"]}, None),
    "inline duplicate id": ({"rows": [{"id": "a", "v": 1}, {"id": "a", "v": 2}]}, None),
}


@pytest.mark.parametrize("case", BROKEN_DATASETS, ids=list(BROKEN_DATASETS))
def test_a_folder_task_with_a_broken_dataset_is_left_out_alone(tmp_path: Path, case: str) -> None:
    dataset, jsonl = BROKEN_DATASETS[case]
    if jsonl is not None:
        write(tmp_path / "tasks/rows.jsonl", jsonl)
    broken = _dataset_task(tmp_path / "tasks", "broken", dataset)
    write_task(tmp_path / "tasks", task_with(task_id="ok"), "ok.yaml")
    result = resolve(RunSpec(task_paths=[str(tmp_path / "tasks")]))
    result.skip_invalid_folder_files()
    assert result.problems == []
    assert [rt.task_id for rt in result.row_tasks] == ["ok"]
    (skipped,) = result.skipped
    assert skipped.path == str(broken) and skipped.invalid and "dataset" in skipped.reason
    named = resolve(RunSpec(task_paths=[str(broken)]))
    named.skip_invalid_folder_files()
    assert named.problems and named.skipped == []  # a file named on the command line refuses the run


def _dialog(folder: Path, **simulation: Any) -> Path:
    write(folder / "traj.yaml", TRAJECTORY)
    block = {"enabled": True, "persona": "p", "goal": "g", **simulation}
    return write_task(folder, task_with(agent={"type": "replay", "trajectory": "traj.yaml"}, simulation=block))


def test_repeats_apply_to_a_dialog_of_one_trial(tmp_path: Path) -> None:
    task = _dialog(tmp_path)
    (row_task,) = resolve(RunSpec(task_paths=[str(task)], repeats=3)).row_tasks
    assert row_task.replicates == 3


def test_a_dialog_of_several_trials_says_it_sets_aside_repeats(tmp_path: Path) -> None:
    task = _dialog(tmp_path, n_trials=2)
    result = resolve(RunSpec(task_paths=[str(task)], repeats=3))
    assert [rt.replicates for rt in result.row_tasks] == [2]
    (warning,) = result.warnings
    assert (warning.path, warning.field) == (str(task), "simulation.n_trials")
    assert warning.message.startswith("warning: the dialog runs its 2 trials, not --repeats (3)")
    assert resolve(RunSpec(task_paths=[str(task)])).warnings == []


def test_every_variant_problem_is_said_at_its_variant_in_one_pass(tmp_path: Path) -> None:
    write(tmp_path / "tasks/traj.yaml", TRAJECTORY)
    write(tmp_path / "tasks/rows.jsonl", '{"id": "r1", "v": "a"}\n')
    _dataset_task(
        tmp_path / "tasks",
        "ds",
        {"paths": ["rows.jsonl"]},
        initial_prompt="do ${row.v}",
        agent={"type": "replay", "trajectory": "traj.yaml"},
    )
    experiment = write(
        tmp_path / "experiments/e.yaml",
        """\
        experiment_id: e
        tasks: ["../tasks/ds.yaml"]
        variants:
          - variant_id: ok
          - variant_id: noprompt
            agent: {type: none}
          - variant_id: missingfield
            initial_prompt: "x ${row.nothere}"
        """,
    )
    problems = resolve(RunSpec(experiment=str(experiment))).problems
    assert [(p.path, p.line, p.field) for p in problems] == [
        (str(experiment), 6, "variants.1.agent"),
        (str(experiment), 8, "variants.2.initial_prompt"),
    ]
    assert "only allowed with type replay" in problems[0].message and "agent.trajectory" in problems[0].message
    assert problems[1].message.startswith("unknown row field(s) nothere")


def test_a_problem_only_a_variant_causes_is_said_at_the_variant(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", task_with())
    experiment = write(
        tmp_path / "e.yaml",
        "experiment_id: e\ntasks: [tasks/task.yaml]\nvariants:\n  - variant_id: ok\n  - variant_id: none\n"
        "    agent: {type: none}\n",
    )
    (problem,) = resolve(RunSpec(experiment=str(experiment))).problems
    assert (problem.path, problem.line, problem.field) == (str(experiment), 5, "variants.1")
    assert problem.message.startswith("initial_prompt: a type: none task has no agent to read a prompt")
    plain = write(tmp_path / "plain.yaml", "experiment_id: p\ntasks: [tasks/task.yaml]\nvariants:\n  - variant_id: v\n")
    assert resolve(RunSpec(experiment=str(plain))).problems == []


def test_a_variant_prompt_without_a_dataset_is_the_variant_problem(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", task_with())
    experiment = write(
        tmp_path / "e.yaml",
        'experiment_id: e\ntasks: [tasks/task.yaml]\nvariants:\n  - variant_id: v\n    initial_prompt: "${row.x}"\n',
    )
    (problem,) = resolve(RunSpec(experiment=str(experiment))).problems
    assert (problem.path, problem.line, problem.field) == (str(experiment), 5, "variants.0.initial_prompt")


def test_validate_knows_an_experiment_without_its_id(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", task_with())
    experiment = write(tmp_path / "e.yaml", "tasks: [tasks/task.yaml]\nvariants: [{variant_id: a}]\n")
    validated = run_cli("validate", experiment)
    assert validated.code == 1
    assert validated.err.splitlines() == [f"{experiment}:1: experiment_id: Field required"]


def test_a_missing_experiment_task_is_the_experiment_problem(tmp_path: Path) -> None:
    experiment = write(
        tmp_path / "experiments/e.yaml",
        'experiment_id: e\ntasks: ["../tasks/nope.yaml"]\nvariants: [{variant_id: a}]\n',
    )
    problems = resolve(RunSpec(experiment=str(experiment))).problems
    missing = tmp_path / "tasks/nope.yaml"
    assert problems == [Problem(str(experiment), 2, "tasks.0", f"no such file or directory: {missing}")]


def _labelled(folder: Path, expected: str, rows: list[dict[str, Any]]) -> Path:
    criterion = {
        "type": "classification_match",
        "path": "result.txt",
        "expected_label": expected,
        "allowed_labels": ["positive", "negative"],
        "description": "label",
    }
    return write_task(folder, task_with(success_criteria=[criterion], dataset={"rows": rows}))


def test_an_expected_label_outside_allowed_labels_is_warned_once_with_its_rows(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "label": "neutral"} for i in range(5)] + [{"id": "ok", "label": "Positive"}]
    task = _labelled(tmp_path, "${row.label}", rows)
    result = resolve(RunSpec(task_paths=[str(task)]))
    assert result.problems == [] and len(result.row_tasks) == 6
    (warning,) = result.warnings
    assert (warning.path, warning.field) == (str(task), "success_criteria.0.expected_label")
    assert warning.message == (
        "warning: 'neutral' is not one of allowed_labels (positive, negative): never a match "
        "(rows 'r0', 'r1', 'r2' and 2 more)"
    )


def test_a_sentinel_expected_label_is_a_label_not_a_warning(tmp_path: Path) -> None:
    """``(none)`` is the answer "no label" (a missing or empty file matches it), ``(other)`` "none of these": a row
    expecting either can pass, so a warning that it can never match would be false."""
    rows = [{"id": "abstain", "label": "(none)"}, {"id": "odd", "label": "(other)"}]
    task = _labelled(tmp_path, "${row.label}", rows)
    result = resolve(RunSpec(task_paths=[str(task)]))
    assert result.problems == [] and result.warnings == []


def test_a_literal_expected_label_outside_allowed_labels_is_warned_by_validate(tmp_path: Path) -> None:
    task = _labelled(tmp_path, "maybe", [{"id": "a", "label": "x"}])
    result = run_cli("validate", task)
    assert result.code == 0
    assert "success_criteria.0.expected_label: warning: 'maybe' is not one of allowed_labels" in result.err
    fine = _labelled(tmp_path / "fine", "NEGATIVE", [{"id": "a", "label": "x"}])
    assert "warning" not in run_cli("validate", fine).err


def test_a_codex_input_budget_that_counts_no_fresh_token_is_warned(tmp_path: Path) -> None:
    """codex's fresh prompt tokens are cache creation: max_input_tokens without count_cache_creation never bound,
    and said nothing (also under --type codex over another agent's task)."""
    limits = {"max_input_tokens": 4000}
    task = write_task(tmp_path, task_with(agent={"type": "codex", "model": "gpt-5-codex"}, run_limits=limits))
    (warning,) = resolve(RunSpec(task_paths=[str(task)])).warnings
    assert (warning.path, warning.field) == (str(task), "run_limits.max_input_tokens")
    assert "without run_limits.count_cache_creation: true" in warning.message
    counted = write_task(
        tmp_path / "counted", task_with(agent={"type": "codex"}, run_limits={**limits, "count_cache_creation": True})
    )
    assert resolve(RunSpec(task_paths=[str(counted)])).warnings == []
    other = write_task(tmp_path / "other", task_with(run_limits=limits))
    assert resolve(RunSpec(task_paths=[str(other)])).warnings == []
    assert len(resolve(RunSpec(task_paths=[str(other)], agent_type="codex")).warnings) == 1
