"""coder_eval 0.12.16's Harbor forms, through the installed CLI: each refused in one line saying it is not
supported here, exit 2. `export task.yaml -o d` said "the following arguments are required: --format" (our export
takes a run folder), and `harbor` was an unknown verb."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (("harbor", "reward", "runs/x"), "coder-eval harbor: not supported: there is no Harbor integration here"),
        (("export", "{task}", "-o", "dist"), "coder-eval export: not supported: exporting task files to Harbor"),
        (("export", "{task}", "--output=dist", "--format", "harbor"), "coder-eval export: not supported"),
        (("run", "{task}", "--workspace-dir", "/tmp/w"), "argument --workspace-dir: not supported: a Harbor agent's"),
        (("run", "{task}", "--logging-dir", "logs"), "argument --logging-dir: not supported: a Harbor agent's"),
        (("run", "{task}", "--artifacts-dir", "art"), "argument --artifacts-dir: not supported: a Harbor agent's"),
        (("run", "{task}", "--allow-host-grading"), "argument --allow-host-grading: not supported: a driver: docker"),
    ],
    ids=["harbor", "export-o", "export-output", "workspace-dir", "logging-dir", "artifacts-dir", "host-grading"],
)
def test_a_harbor_form_is_one_line_not_supported(system_cli: SystemCli, words: tuple[str, ...], said: str) -> None:
    task = task_file(system_cli.folder / "tasks", "ok", agent={"type": "none"})
    outcome = system_cli(*(word.format(task=task) for word in words), env={}, cwd=system_cli.folder)
    assert outcome.code == 2, outcome.output
    (line,) = outcome.err.strip().splitlines()
    assert said in line, line
    assert not any(Path(system_cli.folder, name).exists() for name in ("dist", "runs", "logs", "art"))
