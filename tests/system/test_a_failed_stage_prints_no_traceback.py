"""A stage that fails for one evaluation (its sandbox cannot be laid out) is that evaluation's ERROR, said in its row
and result; the terminal shows no Python traceback (that is for -v and CODER_EVAL_DEBUG)."""

from __future__ import annotations

from pathlib import Path

from ..support.helpers import write
from .conftest import SystemCli, only_run

CLASHING_STARTERS = """\
task_id: setupfail
description: a file where a folder must go
agent: {type: none}
sandbox:
  python: null
  template_sources:
    - type: starter_files
      files: [{path: a, content: "x"}]
    - type: starter_files
      files: [{path: a/b, content: "y"}]
success_criteria: [{type: file_exists, path: a, description: a}]
"""


def test_a_sandbox_that_cannot_be_laid_out_is_an_error_without_a_traceback(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    task = write(tmp_path / "setupfail.yaml", CLASHING_STARTERS)
    outcome = system_cli("run", task, "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 1, outcome.output
    assert "Traceback" not in outcome.output and 'File "' not in outcome.output, outcome.err
    result = only_run(system_cli.runs).result("setupfail")
    assert (
        result["final_status"] == "ERROR" and "starter file a/b: a is a file in the sandbox" in result["error_message"]
    )
    assert str(system_cli.runs) not in result["error_message"]  # no host path (it was a raw FileExistsError's)
