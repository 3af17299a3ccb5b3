"""`coder-eval history` names a failing criterion by a row that failed it, as a user runs it."""

from __future__ import annotations

import json

import pytest

from ..support.helpers import write
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def test_a_templated_criterion_is_named_as_a_failing_row_wrote_it(system_cli: SystemCli) -> None:
    """A dataset's criterion description filled per row ("sum ${row.id}") is shown as the row that failed wrote it,
    never as one that passed (the analyst would look at the wrong row)."""
    folder = system_cli.folder / "tasks"
    rows = [{"id": "r1", "a": 1, "b": 1, "expected": 2}, {"id": "r2", "a": 2, "b": 2, "expected": 4}]
    rows.append({"id": "r3", "a": 1, "b": 2, "expected": 4})  # wrong: only r3 fails
    write(folder / "rows.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    adds = "python3 -c 'import sys; print(int(sys.argv[1]) + int(sys.argv[2]))' ${row.a} ${row.b}"
    criterion = {"type": "run_command", "command": adds, "expected_stdout": "${row.expected}"}
    task_file(
        folder,
        "sums",
        agent={"type": "none"},
        dataset={"paths": ["rows.jsonl"]},
        success_criteria=[criterion | {"description": "sum ${row.id}"}],
    )
    outcome, _ = system_cli.run(folder, env={})
    assert outcome.code == 1, outcome.output

    shown = system_cli("history", system_cli.runs, "--format", "json", env={})
    assert shown.code == 0, shown.output
    (failing,) = json.loads(shown.out)["failing_criteria"]
    assert (failing["description"], failing["failures"], failing["evaluated"]) == ("sum r3", 1, 3)
