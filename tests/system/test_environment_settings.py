"""A CODER_EVAL_* setting the code location reads as it loads, given a value it cannot use, is one line and exit 2
through the installed CLI: the CLI loads that module too, and a bad value ended every `coder-eval run` as an
internal error (exit 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli

pytestmark = pytest.mark.slow

TASK = """
task_id: t
description: d
agent: {type: none}
success_criteria: [{type: file_exists, path: a.txt, description: d}]
"""


@pytest.mark.parametrize(
    ("variable", "value", "meaning"),
    [
        ("CODER_EVAL_CONCURRENCY", "abc", "of evaluations at once; 0: the CPU count"),
        ("CODER_EVAL_CONCURRENCY", "-3", "of evaluations at once; 0: the CPU count"),
        ("CODER_EVAL_PARTITIONS_PER_RUN", "ten", "of partitions per run; 0: one run"),
        ("CODER_EVAL_SENSOR_INTERVAL_S", "soon", "of seconds"),
        ("CODER_EVAL_CONCURRENCY", "²", "of evaluations at once; 0: the CPU count"),  # isdigit, not int()'s
    ],
)
def test_a_setting_that_cannot_be_used_is_one_line(
    tmp_path: Path, system_cli: SystemCli, variable: str, value: str, meaning: str
) -> None:
    outcome = system_cli("run", write(tmp_path / "t.yaml", TASK), "--runs-dir", system_cli.runs, env={variable: value})
    assert (outcome.code, outcome.err) == (
        2,
        f"coder-eval: {variable}={value!r}: expected a whole number, at most 9 digits ({meaning})\n",
    )


def test_a_setting_of_thousands_of_digits_is_one_short_line(tmp_path: Path, system_cli: SystemCli) -> None:
    """int() refuses past 4,300 digits: an internal error, and the value would have been said whole."""
    task = write(tmp_path / "t.yaml", TASK)
    outcome = system_cli("run", task, "--runs-dir", system_cli.runs, env={"CODER_EVAL_CONCURRENCY": "9" * 5000})
    assert outcome.code == 2 and len(outcome.err) < 200, outcome.output
    assert outcome.err.startswith("coder-eval: CODER_EVAL_CONCURRENCY='999"), outcome.err
