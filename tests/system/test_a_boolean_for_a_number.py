"""A boolean where the format wants a number, through the installed CLI: `weight: true` was read as 1.0 (and
`weight: false` as an informational 0); now `validate` refuses it at its line (exit 1) and `run` will not start
(exit 2), neither with a traceback."""

from __future__ import annotations

import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def test_a_weight_of_true_is_refused_at_its_line(system_cli: SystemCli) -> None:
    criteria = [{"type": "file_exists", "path": "a.txt", "description": "a.txt exists", "weight": True}]
    task = task_file(system_cli.folder / "tasks", "flag", agent={"type": "none"}, success_criteria=criteria)
    line = task.read_text(encoding="utf-8").splitlines().index("  weight: true") + 1
    said = f"{task}:{line}: success_criteria.0.weight: a number is expected, not a boolean (true)"
    refused = system_cli.invalid(task)
    assert said in refused.err.splitlines(), refused.output
    outcome = system_cli("run", task, "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 2 and said in outcome.err.splitlines(), outcome.output
    for output in (refused.output, outcome.output):
        assert "Traceback" not in output and "internal error" not in output
