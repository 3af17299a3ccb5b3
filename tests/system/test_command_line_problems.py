"""Problems of what a user typed, through the installed ``coder-eval``: a command-line value that does not fit the
task files of a folder is one usage error naming the option (exit 2, nothing runs), never a skipped task file per
file blamed at a line the value never came from; a malformed ``-D`` has no line number; a misspelt variant field
and a task file given as ``-e`` get the one suggestion that fixes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli, claude_code_task, task_file

pytestmark = pytest.mark.slow


def _agentless(folder: Path, task_id: str) -> Path:
    return task_file(folder, task_id, agent={"type": "none"})


def _run(system_cli: SystemCli, *args: str | Path) -> tuple[int, list[str]]:
    """``coder-eval run ARGS``: its exit code and stderr lines; it must have written no run folder."""
    outcome = system_cli("run", *args, "--runs-dir", system_cli.runs, env={})
    assert not system_cli.runs.exists(), outcome.output
    return outcome.code, outcome.err.splitlines()


@pytest.mark.parametrize(
    "option, said",
    [
        (
            ("-D", "run_limits.max_turns=abc"),
            "-D: run_limits.max_turns: Input should be a valid integer, unable to parse string as an integer",
        ),
        (
            ("-D", "run_limits.task_timeout=5"),
            "-D: run_limits.task_timeout: Input should be greater than or equal to 30",
        ),
        (("--type", "nonee"), "--type: agent.type: unknown agent type 'nonee' (did you mean `none`?): installed are"),
        (("--type", "none", "-D", "agent={type: nonee}"), "-D: agent.type: unknown agent type 'nonee'"),  # -D's
    ],
)
def test_a_value_no_task_of_a_folder_takes_is_one_usage_error(
    tmp_path: Path, system_cli: SystemCli, option: tuple[str, ...], said: str
) -> None:
    """Each task file was skipped, blamed at its own line (``tasks/a.yaml:1:``), the run going on without them."""
    for task_id in ("one", "two", "three"):
        _agentless(tmp_path / "tasks", task_id)
    code, lines = _run(system_cli, tmp_path / "tasks", *option)
    assert code == 2 and len(lines) == 1 and lines[0].startswith(said), lines
    assert "skipped" not in lines[0] and ".yaml" not in lines[0], lines  # every file: none is named


def test_a_value_that_fits_some_task_files_only_names_the_others(tmp_path: Path, system_cli: SystemCli) -> None:
    """``-D initial_prompt=hi`` over a folder skipped its agentless tasks and ran the others (exit 1): the option
    is what the user typed, so nothing runs, and the files it does not fit are named."""
    agentless = [_agentless(tmp_path / "tasks", task_id) for task_id in ("a_none", "b_none")]
    claude_code_task(tmp_path / "tasks", "coding")
    code, lines = _run(system_cli, tmp_path / "tasks", "-D", "initial_prompt=hi")
    assert (code, lines) == (
        2,
        [f"-D: initial_prompt: a type: none task has no agent to read a prompt (in {agentless[0]} and {agentless[1]})"],
    )


def test_a_value_that_names_a_broken_file_keeps_that_file_s_line(tmp_path: Path, system_cli: SystemCli) -> None:
    """A dataset a -D names is read as the task's: a problem in its rows is said at its line, the -D named."""
    rows = write(tmp_path / "rows.jsonl", '{"id": "r1"}\nnot json\n')
    task = _agentless(tmp_path, "ds")
    code, lines = _run(system_cli, task, "-D", "dataset.paths=[rows.jsonl]")
    assert (code, lines) == (
        2,
        [f"{rows}:2: dataset.paths.0: invalid JSON: Expecting value (value set by -D dataset.paths)"],
    )


@pytest.mark.parametrize(
    "override, said",
    [
        ("foo", "-D: foo: expected key.path=value, got 'foo'"),
        ("=3", "-D: =3: expected key.path=value, got '=3'"),
        ("agent={type: ", "-D: agent: value '{type: ' is not valid YAML ("),
        ("pre_run.5.command=x", "-D: pre_run.5.command: path does not exist in the task"),
    ],
)
def test_a_malformed_d_is_said_without_a_line(tmp_path: Path, system_cli: SystemCli, override: str, said: str) -> None:
    """It was said at ``-D:1:``, a line of no file."""
    code, lines = _run(system_cli, _agentless(tmp_path, "one"), "-D", override)
    assert code == 2 and len(lines) == 1 and lines[0].startswith(said), lines


def test_a_misspelt_variant_id_is_suggested_from_its_own_block(tmp_path: Path, system_cli: SystemCli) -> None:
    """``variant: a`` was pointed at opencode's ``variants.0.agent.variant``, a block down."""
    task = _agentless(tmp_path, "one")
    experiment = write(tmp_path / "exp.yaml", "experiment_id: e\nvariants:\n  - variant: a\n")
    code, lines = _run(system_cli, task, "-e", experiment)
    assert code == 2, lines
    assert (
        f"{experiment}:3: variants.0.variant: unknown field (not part of the format) (did you mean `variant_id`?)"
        in lines
    )


def test_a_task_file_given_as_the_experiment_is_said_in_one_line(tmp_path: Path, system_cli: SystemCli) -> None:
    """Each of its fields was said unknown to an experiment, with a did-you-mean (8 lines)."""
    task = _agentless(tmp_path, "one")
    code, lines = _run(system_cli, task, "-e", task)
    assert (code, lines) == (2, [f"{task}:1: task_id: this is a task file, not an experiment: pass it without -e"])
