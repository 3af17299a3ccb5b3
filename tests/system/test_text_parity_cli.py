"""CRLF and CR text through the installed ``coder-eval``, scored as coder_eval 0.12.16 scores it.

coder_eval reads a file a criterion checks and a ``run_command``'s output in text mode (universal newlines: ``\\r\\n``
and ``\\r`` are ``\\n``). The task below scores 1 on all five criteria there (checked against the released
0.12.16); it scored 0 on all five here when the bytes were matched raw. Its pre_run output is recorded as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli

pytestmark = pytest.mark.slow

CRLF_TASK = r"""
task_id: crlf
description: CRLF files
agent: {type: none}
sandbox: {driver: tempdir, python: null}
pre_run:
  - command: "printf 'API_KEY = \"abc\"\\r\\nDEBUG = True\\r\\n' > config.py; printf 'line1\\rline2\\r' > cr.txt"
  - command: "printf 'kept\\r\\n'"
success_criteria:
  - {type: file_matches_regex, path: config.py, pattern: "^API_KEY = ['\"]\\w+['\"]$", flags: 8, description: "guide pattern, MULTILINE"}
  - {type: file_contains, path: config.py, includes: ["\"abc\"\nDEBUG"], description: "multi-line include"}
  - {type: file_check, path: config.py, patterns: [{pattern: "True$", flags: 8}], description: "file_check $"}
  - {type: file_matches_regex, path: cr.txt, pattern: "^line2$", flags: 8, description: "CR file"}
  - {type: run_command, command: "printf 'a\\r\\nb\\r\\n'", expected_stdout: "a\nb", description: "CRLF stdout exact"}
"""

NEVER_FAILS = r"""
task_id: vacuous
description: a cli_called guard with no bound
agent: {type: none}
sandbox: {python: null}
success_criteria:
  - type: cli_called
    description: never fails
    log: calls.jsonl
    verb: ixp fields delete
    min_count: 0
"""


def test_crlf_and_cr_text_score_as_in_coder_eval(tmp_path: Path, system_cli: SystemCli) -> None:
    task = write(tmp_path / "crlf.yaml", CRLF_TASK)
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    result = run.result("crlf")
    scores = {c["description"]: c["score"] for c in result["success_criteria_results"]}
    assert scores == {
        "guide pattern, MULTILINE": 1.0,
        "multi-line include": 1.0,
        "file_check $": 1.0,
        "CR file": 1.0,
        "CRLF stdout exact": 1.0,
    }, result["success_criteria_results"]
    assert result["final_status"] == "SUCCESS"
    assert [r["stdout"] for r in result["pre_run_results"]] == ["", "kept\r\n"]  # as coder_eval records it


def test_a_cli_called_that_can_never_fail_is_refused(tmp_path: Path, system_cli: SystemCli) -> None:
    task = write(tmp_path / "vacuous.yaml", NEVER_FAILS)
    outcome = system_cli.invalid(task)
    assert (
        f"{task}:11: success_criteria.0.min_count: cli_called with min_count: 0 and no max_count can never fail. "
        "Set max_count: 0 for a negative guard, or raise min_count for a positive assertion."
    ) in outcome.err, outcome.output
