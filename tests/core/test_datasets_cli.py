"""Row values in commands, through the installed CLI as a user runs it (defect sweep, item 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..support.helpers import criterion, write_task

CLI = Path(sys.executable).parent / "coder-eval"
VALUES = ["x; touch PWNED_CS", "y) ; touch PWNED_PAREN ; (echo", "hello world", "$(touch PWNED_DQ) `touch PWNED_BQ`"]


def coder_eval(folder: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The console script in ``folder``, with an instance of its own and no credential of this process."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(("DAGSTER_", "CODER_EVAL_"))}
    env |= {"DAGSTER_HOME": str(folder / "dagster_home"), "TELEMETRY_ENABLED": "false"}
    command = [str(CLI), *map(str, args)]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def _rows_task(folder: Path, dataset: dict[str, Any], pre_run: list[str], criteria: list[dict[str, Any]]) -> Path:
    """An agentless dataset task whose pre_run commands hold row placeholders."""
    return write_task(
        folder,
        {
            "task_id": "rows",
            "description": "row values as data",
            "agent": {"type": "none"},
            "sandbox": {"python": None},
            "dataset": dataset,
            "pre_run": [{"command": command} for command in pre_run],
            "success_criteria": criteria,
        },
    )


def test_row_values_in_substitutions_and_here_documents_are_written_never_run(tmp_path: Path) -> None:
    rows = [{"id": f"r{index}", "q": value} for index, value in enumerate(VALUES)]
    task = _rows_task(
        tmp_path,
        {"rows": rows},
        ["echo \"$(printf '%s' ${row.q})\" > subst.txt", "cat > here.txt <<EOF\n${row.q}\nEOF\n"],
        [
            criterion("file_contains", path=f"{name}.txt", includes=["${row.q}"], description=name)
            for name in ("subst", "here")
        ],
    )
    done = coder_eval(tmp_path, "run", task, "--runs-dir", tmp_path / "runs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list((tmp_path / "runs").rglob("PWNED*"))


def test_a_value_that_would_end_its_here_document_refuses_the_task_at_its_row(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text('{"id": "r1", "q": "ok"}\n{"id": "r2", "q": "x\\nEOF\\ntouch PWNED"}\n')
    task = _rows_task(
        tmp_path,
        {"paths": ["rows.jsonl"]},
        ["cat > here.txt <<EOF\n${row.q}\nEOF\n"],
        [criterion("file_exists", path="here.txt")],
    )
    done = coder_eval(tmp_path, "validate", task)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{tmp_path}/rows.jsonl:2: q: row 'r2': " in done.stderr and "here-document ('EOF')" in done.stderr
