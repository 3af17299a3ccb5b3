"""One value where a list belongs says how to write it as a list, with the field's own name and the value given
(pydantic's bare "Input should be a valid list" gave no example)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import run_cli, write

TASK = """task_id: t
description: d
agent: {type: none}
sandbox: {python: null}
"""
CRITERIA = "success_criteria: [{type: file_exists, path: a.txt, description: a exists}]\n"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            TASK + CRITERIA + "tags: smoke\n",
            ":6: tags: Input should be a valid list: write it as a list, e.g. tags: [smoke]",
        ),
        (
            TASK.replace("python: null", "python: {env_packages: pytest}") + CRITERIA,
            ":4: sandbox.python.env_packages: Input should be a valid list: write it as a list, e.g. "
            "env_packages: [pytest]",
        ),
        (
            TASK + "success_criteria:\n  type: file_exists\n  path: a.txt\n  description: a exists\n",
            ":5: success_criteria: Input should be a valid list: write it as a list, e.g. "
            "success_criteria: [{type: file_exists, path: a.txt, description: a exists}]",
        ),
        (
            TASK + CRITERIA + "tags: 'a: b'\n",
            ":6: tags: Input should be a valid list: write it as a list, e.g. tags: ['a: b']",
        ),
    ],
)
def test_a_single_value_where_a_list_belongs_says_how_to_write_the_list(tmp_path: Path, text: str, said: str) -> None:
    task = write(tmp_path / "t.yaml", text)
    result = run_cli("validate", task)
    assert result.code == 1
    assert result.err.strip() == f"{task}{said}"


def test_a_long_value_is_cut_in_the_example(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", TASK + CRITERIA + f"tags: {'x' * 200}\n")
    result = run_cli("validate", task)
    assert result.err.strip().endswith(f"e.g. tags: [{'x' * 71} ...]")
