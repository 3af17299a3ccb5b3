"""coder_eval forms its `plan` accepts that our validate refused once: each loaded, and what it does here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.models.report import TaskRow
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.models.task import Task
from coder_eval_dagster.core.resolution import resolve
from coder_eval_dagster.core.run_spec import RunSpec
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox

from ..support.helpers import agentless_task, criterion, evaluate_replay, run_cli, task_with, write, write_task

JUDGE = criterion("llm_judge", prompt="grade it")


def _refused(*args: str | Path) -> str:
    result = run_cli("validate", *args)
    assert result.code == 1, result.out
    return result.err


def _accepted(*args: str | Path) -> None:
    result = run_cli("validate", *args)
    assert result.code == 0, result.err


def _experiment(tmp_path: Path, text: str) -> Path:
    return write(tmp_path / "experiments/exp.yaml", text)


def _judge_models(tmp_path: Path, task: dict[str, Any], experiment: Path | None = None) -> list[str]:
    spec = RunSpec(task_paths=[str(write_task(tmp_path / "tasks", task))], experiment=str(experiment or "") or None)
    result = resolve(spec)
    assert not result.problems, [str(p) for p in result.problems]
    return [c.model for rt in result.row_tasks for c in rt.task.success_criteria if c.type == "llm_judge"]


# ----------------------------------------------------------------------------- expected_commands


def test_expected_commands_is_recorded_beside_the_actual_count_and_never_gates(tmp_path: Path) -> None:
    _accepted(write_task(tmp_path, task_with(expected_commands=3)))
    assert "expected_commands" in _refused(write_task(tmp_path, task_with(expected_commands=0), "zero.yaml"))

    calls = [{"tool": "Bash", "command": f"echo {n}"} for n in range(4)]
    result = evaluate_replay(
        tmp_path / "ran",
        [{"calls": calls}],
        expected_commands=2,
        success_criteria=[criterion("run_command", command="true")],
    )
    assert (result.final_status, result.expected_commands, result.actual_commands) == ("SUCCESS", 2, 4)
    assert result.commands_efficiency == pytest.approx(0.5)  # coder_eval's expected / max(actual, expected)
    dumped = result.model_dump(mode="json", by_alias=True)
    assert (dumped["expected_commands"], dumped["commands_efficiency"]) == (2, 0.5)
    row = TaskRow.of(result)
    assert (row.expected_commands, row.actual_commands, row.commands_efficiency) == (2, 4, 0.5)

    unset = evaluate_replay(
        tmp_path / "unset", [{"calls": calls}], success_criteria=[criterion("run_command", command="true")]
    )
    assert (unset.expected_commands, unset.commands_efficiency) == (None, None)


# ----------------------------------------------------------------------------- checker_context


def test_checker_context_model_is_the_model_of_each_llm_judge_naming_none(tmp_path: Path) -> None:
    own = {**JUDGE, "model": "claude-own"}
    task = task_with(checker_context={"api_route": {"model": "claude-ctx"}}, success_criteria=[JUDGE, own])
    assert _judge_models(tmp_path, task) == ["claude-ctx", "claude-own"]
    validated = Task.model_validate(task)
    assert validated.checker_context == {"api_route": {"model": "claude-ctx"}}
    assert "model" in validated.success_criteria[0].model_fields_set  # task.json names the model it ran with
    assert _judge_models(tmp_path, task_with(checker_context=None, success_criteria=[JUDGE])) != ["claude-ctx"]


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"api_route": {"route": "litellm", "model": "m"}}, "api_route.route: not supported: the judges call"),
        ({"api_route": {"params": {"api_base": "x"}}}, "api_route.params: not supported"),
        ({"api_route": {"rotue": "direct"}}, "unknown api_route field 'rotue'"),
        ({"judges": {}}, "unknown checker_context namespace 'judges'"),
        ({"api_route": {"model": 5}}, "api_route.model must be a model id"),
    ],
)
def test_checker_context_refuses_what_it_cannot_honour(tmp_path: Path, context: Any, message: str) -> None:
    assert message in _refused(write_task(tmp_path, task_with(checker_context=context)))


def test_checker_context_on_a_dataset_task_needs_the_model_on_the_judge(tmp_path: Path) -> None:
    write(tmp_path / "rows.jsonl", '{"id": "r1", "x": "a"}\n')
    dataset = {"paths": ["rows.jsonl"]}
    context = {"api_route": {"model": "claude-ctx"}}
    task = task_with(dataset=dataset, checker_context=context, success_criteria=[JUDGE])
    err = _refused(write_task(tmp_path, task))
    assert "checker_context.api_route.model: not supported on a dataset task" in err
    pinned = task_with(dataset=dataset, checker_context=context, success_criteria=[{**JUDGE, "model": "m"}])
    _accepted(write_task(tmp_path, pinned, "pinned.yaml"))


def test_checker_context_in_experiment_defaults_lies_under_the_tasks(tmp_path: Path) -> None:
    experiment = _experiment(
        tmp_path,
        "experiment_id: exp\ndefaults:\n  checker_context: {api_route: {model: claude-defaults}}\n"
        "variants:\n  - {variant_id: a}\n  - {variant_id: b, checker_context: null}\n",
    )
    plain = task_with(success_criteria=[JUDGE])
    assert _judge_models(tmp_path / "one", plain, experiment) == ["claude-defaults", "claude-defaults"]
    over = task_with(checker_context={"api_route": {"model": "claude-task"}}, success_criteria=[JUDGE])
    assert _judge_models(tmp_path / "two", over, experiment) == ["claude-task", "claude-task"]


def test_checker_context_in_a_variant_is_merged_over_the_tasks(tmp_path: Path) -> None:
    experiment = _experiment(
        tmp_path,
        "experiment_id: exp\nvariants:\n  - {variant_id: a}\n"
        "  - {variant_id: b, checker_context: {api_route: {model: claude-variant}}}\n",
    )
    over = task_with(checker_context={"api_route": {"model": "claude-task"}}, success_criteria=[JUDGE])
    assert _judge_models(tmp_path / "one", over, experiment) == ["claude-task", "claude-variant"]


# ----------------------------------------------------------------------------- template_sources


def _copied(tmp_path: Path, **source: Any) -> list[str]:
    template = tmp_path / "task/tpl"
    for name in (
        "main.py",
        "dist/a.js",
        "dist/b.js",
        "node_modules/keep/index.js",
        "node_modules/drop/i.js",
        ".git/HEAD",
    ):
        write(template / name, "x")
    config = {"python": None, "template_sources": [{"type": "template_dir", "path": "tpl", **source}]}
    box = TempdirSandbox(tmp_path / "run/sandbox", SandboxConfig.model_validate(config))
    box.create(tmp_path / "task")
    return sorted(str(p.relative_to(box.root)) for p in box.root.rglob("*") if p.is_file())


def test_include_patterns_copy_ignored_paths_that_match(tmp_path: Path) -> None:
    assert _copied(tmp_path / "none") == ["main.py"]
    copied = _copied(tmp_path / "some", include_patterns=["dist/a.js", "./node_modules/keep/*"], mount_point="m")
    assert copied == ["m/dist/a.js", "m/main.py", "m/node_modules/keep/index.js"]  # what is not ignored, as before
    assert _copied(tmp_path / "folder", include_patterns=["dist"]) == ["main.py"]  # the folder, not what it holds


@pytest.mark.parametrize(("pattern", "message"), [("../x", "'..' segments"), ("/abs/*", "relative"), ("", "empty")])
def test_include_patterns_stay_inside_the_template(tmp_path: Path, pattern: str, message: str) -> None:
    write(tmp_path / "tpl/a.txt", "x")
    source = {"type": "template_dir", "path": "tpl", "include_patterns": [pattern]}
    err = _refused(write_task(tmp_path, task_with(sandbox={"template_sources": [source]})))
    assert "sandbox.template_sources.0.include_patterns" in err and message in err


def test_template_sources_in_experiment_defaults_come_after_the_tasks_and_before_the_variants(tmp_path: Path) -> None:
    for name in ("task/own", "experiments/shared", "experiments/hint"):
        write(tmp_path / name / "x.txt", name)
    experiment = _experiment(
        tmp_path,
        "experiment_id: exp\ndefaults:\n  template_sources: [{type: template_dir, path: shared}]\n"
        "variants:\n  - {variant_id: a}\n  - {variant_id: b, template_sources: [{type: template_dir, path: hint}]}\n",
    )
    task = write_task(
        tmp_path / "task", task_with(sandbox={"template_sources": [{"type": "template_dir", "path": "own"}]})
    )
    resolution = resolve(RunSpec(task_paths=[str(task)], experiment=str(experiment)))
    assert not resolution.problems, resolution.problems
    paths = {
        rt.variant_id: [Path(s.path).name for s in rt.task.sandbox.template_sources] for rt in resolution.row_tasks
    }
    assert paths == {"a": ["own", "shared"], "b": ["own", "shared", "hint"]}


# ----------------------------------------------------------------------------- criteria


def test_command_not_executed_is_command_executed_never_run(tmp_path: Path) -> None:
    alias = criterion("command_not_executed", command_pattern="rm ", min_count=2, max_count=5)
    (parsed,) = Task.model_validate(task_with(success_criteria=[alias])).success_criteria
    assert (parsed.type, parsed.min_count, parsed.max_count) == ("command_executed", 0, 0)  # the alias's fields win

    def status(command: str) -> str:
        turns = [{"calls": [{"tool": "Bash", "command": command}]}]
        return evaluate_replay(tmp_path / command.split()[0], turns, success_criteria=[alias]).final_status

    assert (status("ls -la"), status("rm -rf build")) == ("SUCCESS", "FAILURE")


def test_suite_thresholds_null_is_no_threshold(tmp_path: Path) -> None:
    spec = criterion("file_exists", path="a.txt", suite_thresholds=None)
    (parsed,) = Task.model_validate(agentless_task(success_criteria=[spec])).success_criteria
    assert parsed.suite_thresholds == {}
    _accepted(write_task(tmp_path, agentless_task(success_criteria=[spec])))
