"""``${row.x}`` in a prompt file, and a row's weights, through the installed ``coder-eval``: a prompt file's text is
checked as its inline field is (filled per row in the initial prompt, refused in the system prompt and in a task
without a dataset), and a row that leaves every criterion at weight 0 is refused at load as the static form is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..support.helpers import write
from .conftest import SystemCli, replay_task_file, task_file

pytestmark = pytest.mark.slow

AGENT = {"type": "claude-code", "model": "claude-test", "permission_mode": "bypassPermissions"}
NOT_SUBSTITUTED = (
    "${row.…} is not substituted here; only initial_prompt, success_criteria, pre_run/post_run commands and "
    "agent.trajectory are"
)
NO_DATASET = "${row.…} needs a dataset: this task has none"
ALL_ZERO = "every criterion has weight 0: nothing decides the task's success; give one a weight > 0"


def _line(task: Path, key: str) -> int:
    """The line of the task file where ``key:`` is written (at any depth)."""
    lines = task.read_text(encoding="utf-8").splitlines()
    return next(number for number, text in enumerate(lines, 1) if text.lstrip().startswith(f"{key}:"))


def _refused(system_cli: SystemCli, task: Path) -> str:
    """What ``validate`` said of a task it refused (exit 1), without a traceback; ``run`` refuses it too (exit 2,
    no evaluation)."""
    said = system_cli.invalid(task).output
    assert "Traceback" not in said, said
    ran = system_cli("run", task, "--runs-dir", system_cli.runs, env={})
    assert ran.code == 2 and "Traceback" not in ran.output, ran.output
    assert not system_cli.runs.exists() or not list(system_cli.runs.rglob("task.json")), ran.output
    return said


def test_a_prompt_file_placeholder_without_a_dataset_is_refused(tmp_path: Path, system_cli: SystemCli) -> None:
    """It validated and the agent was sent ``word=${row.word}`` as written."""
    write(tmp_path / "tasks/prompt.md", "word=${row.word}\n")
    task = task_file(tmp_path / "tasks", "nodata", agent=AGENT, initial_prompt_file="prompt.md")
    said = _refused(system_cli, task)
    line = _line(task, "initial_prompt_file")
    assert said.strip() == f"{task}:{line}: initial_prompt_file: {NO_DATASET} (in the file prompt.md)", said


def test_code_in_a_prompt_file_that_looks_like_a_placeholder_stays_text(tmp_path: Path, system_cli: SystemCli) -> None:
    """A JavaScript template literal in a prompt file (``${rows.length}``) was refused as a near-miss placeholder;
    coder_eval passes it to the agent as written, and so do we (an inline prompt still refuses it)."""
    write(tmp_path / "tasks/prompt.md", "Fix the table so it shows `${rows.length} rows` in the footer.\n")
    task = replay_task_file(
        tmp_path / "tasks",
        "js",
        [{"text": "done"}],
        initial_prompt=None,
        initial_prompt_file="prompt.md",
        success_criteria=[{"type": "run_command", "command": "true", "description": "ran"}],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    assert "`${rows.length} rows`" in json.dumps(run.result("js"))  # the prompt as the agent was given it


@pytest.mark.parametrize("dataset", [True, False], ids=["with-dataset", "without-dataset"])
def test_a_system_prompt_file_placeholder_is_refused_as_the_inline_one_is(
    tmp_path: Path, system_cli: SystemCli, dataset: bool
) -> None:
    """With a dataset, the file's text reached the agent verbatim while ``system_prompt: ${row.word}`` was refused."""
    write(tmp_path / "tasks/system.md", "You check ${row.word}.\n")
    rows: dict[str, Any] = {"dataset": {"rows": [{"id": "a", "word": "apple"}]}} if dataset else {}
    inline = task_file(tmp_path / "inline", "inline", agent={**AGENT, "system_prompt": "${row.word}"}, **rows)
    inline_said = system_cli.invalid(inline).output
    task = task_file(
        tmp_path / "tasks",
        "system",
        agent={**AGENT, "system_prompt_file": "system.md"},
        initial_prompt="go",
        **rows,
    )
    said = _refused(system_cli, task)
    why = NOT_SUBSTITUTED if dataset else NO_DATASET
    assert f"agent.system_prompt: {why}" in inline_said, inline_said  # the same rule as the inline field's
    line = _line(task, "system_prompt_file")
    assert said.strip() == f"{task}:{line}: agent.system_prompt_file: {why} (in the file system.md)", said


def test_the_initial_prompt_file_is_filled_per_row_and_must_name_a_field_every_row_has(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """Filled per row as an inline prompt is; a field one row lacks is said at the file's field, naming the file
    and the row (it was said at line 1 as ``initial_prompt``, a field the task does not have)."""
    tasks = tmp_path / "tasks"
    write(tasks / "prompt.md", "word=${row.word}\n")
    write(tasks / "rows.jsonl", "".join(json.dumps(row) + "\n" for row in [{"id": "a", "word": "apple"}]))
    write(tasks / "more.jsonl", json.dumps({"id": "a", "word": "apple"}) + "\n" + json.dumps({"id": "b"}) + "\n")
    task = replay_task_file(
        tasks,
        "filled",
        [{"text": "done"}],
        initial_prompt=None,
        initial_prompt_file="prompt.md",
        dataset={"paths": ["rows.jsonl"]},
        pre_run=[{"command": "echo a > a.txt"}],
        success_criteria=[{"type": "file_exists", "path": "a.txt", "description": "a"}],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    result = run.result("filled/a")
    assert result["task_config"]["resolved"]["initial_prompt"] == "word=apple"  # what the agent was sent
    assert result["iterations"][0]["user_input"] == "word=apple"

    data = task.read_text(encoding="utf-8").replace("rows.jsonl", "more.jsonl")
    lacking = write(tasks / "lacking.yaml", data.replace("task_id: filled", "task_id: lacking"))
    said = system_cli.invalid(lacking).output
    line = _line(lacking, "initial_prompt_file")
    expected = (
        f"{lacking}:{line}: initial_prompt_file: unknown row field(s) word in ${{row.…}} of the file prompt.md "
        f"(row 'b' at {tasks / 'more.jsonl'}:2)"
    )
    assert said.strip() == expected, said


def test_a_row_whose_weights_are_all_zero_is_refused_at_load(tmp_path: Path, system_cli: SystemCli) -> None:
    """The static form (``weight: 0`` everywhere) is refused; a row filling every weight with 0 validated and
    scored SUCCESS 1.0 (0/0) though its one check failed."""
    tasks = tmp_path / "tasks"
    write(tasks / "rows.jsonl", json.dumps({"id": "a", "w": 1}) + "\n" + json.dumps({"id": "b", "w": 0}) + "\n")
    task = task_file(
        tasks,
        "weights",
        agent={"type": "none"},
        dataset={"paths": ["rows.jsonl"]},
        success_criteria=[{"type": "run_command", "command": "false", "weight": "${row.w}", "description": "c"}],
    )
    said = _refused(system_cli, task)
    line = _line(task, "success_criteria")
    expected = f"{task}:{line}: success_criteria: {ALL_ZERO} (row 'b' at {tasks / 'rows.jsonl'}:2)"
    assert said.strip() == expected, said
