"""task.html of a run made by the installed CLI: a run_command's default match mode is shown beside its expected
stdout, and an evaluation whose pre_run failed says its criteria were not checked (not an empty table)."""

from __future__ import annotations

from pathlib import Path

from ..support.helpers import write
from .conftest import SystemCli, only_run

TASKS = """task_id: {task_id}
description: d
agent: {{type: none}}
sandbox: {{python: null}}
pre_run: [{{command: "{pre_run}"}}]
success_criteria:
  - {{type: run_command, command: echo 41, expected_stdout: "42", description: prints the answer}}
"""


def test_task_html_shows_the_match_mode_and_why_criteria_were_not_checked(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    tasks = tmp_path / "tasks"
    write(tasks / "wrong.yaml", TASKS.format(task_id="wrong", pre_run="true"))
    write(tasks / "broken.yaml", TASKS.format(task_id="broken", pre_run="exit 9"))
    outcome = system_cli("run", tasks, "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 1, outcome.output
    run = only_run(system_cli.runs).path
    wrong = (run / "default/wrong/00/task.html").read_text()
    assert "<dt>expected_stdout</dt><dd>42</dd><dt>stdout_match</dt><dd>exact</dd>" in wrong
    broken = (run / "default/broken/00/task.html").read_text()
    assert "criteria not checked: the evaluation ended as ERROR in pre_run" in broken
    assert "<th>description</th>" not in broken
