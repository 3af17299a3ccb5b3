"""``coder-eval validate`` of the new-user sweep's shape mistakes (one value where a list belongs) says how to write
each as a list, every one in one pass, through the installed CLI."""

from __future__ import annotations

from pathlib import Path

from ..support.helpers import write
from .conftest import SystemCli

SHAPES = """task_id: t
description: d
tags: smoke
agent: {type: none}
sandbox: {python: {env_packages: pytest}}
success_criteria:
  type: file_exists
  path: a.txt
  description: a exists
"""


def test_each_single_value_where_a_list_belongs_gets_its_list_form(tmp_path: Path, system_cli: SystemCli) -> None:
    task = write(tmp_path / "t.yaml", SHAPES)
    outcome = system_cli.invalid(task)
    assert outcome.err.splitlines() == [
        f"{task}:3: tags: Input should be a valid list: write it as a list, e.g. tags: [smoke]",
        f"{task}:5: sandbox.python.env_packages: Input should be a valid list: write it as a list, e.g. "
        "env_packages: [pytest]",
        f"{task}:6: success_criteria: Input should be a valid list: write it as a list, e.g. "
        "success_criteria: [{type: file_exists, path: a.txt, description: a exists}]",
    ], outcome.output
