"""``coder-eval validate`` of a task whose key is indented one space off says to check the indentation (as the
new-user sweep wrote it: one space too far under a list item got the hint to quote a value), through the installed
CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli

TASK = """task_id: t
description: d
agent: {{type: none}}
sandbox: {{python: null}}
success_criteria:
  - type: file_exists
    path: a.txt
{indent}description: a exists
"""


@pytest.mark.parametrize(
    ("indent", "said"),
    [
        (
            " " * 5,
            "(line 8, column 17): mapping values are not allowed in this context; check the indentation: this "
            "line is indented more than the key above it",
        ),
        (
            " " * 3,
            "(line 8, column 4): did not find expected '-' indicator; check the indentation: this line is "
            "indented less than the key above it",
        ),
    ],
)
def test_a_key_indented_one_space_off_is_said_to_be(
    tmp_path: Path, system_cli: SystemCli, indent: str, said: str
) -> None:
    task = write(tmp_path / "t.yaml", TASK.format(indent=indent))
    outcome = system_cli.invalid(task)
    assert outcome.err.strip() == f"{task}:8: (document): YAML syntax error {said}", outcome.output
