"""The shipped tasks and experiment, as the README runs them: `coder-eval run tasks/` (the main job) and the A/B
`-e smoke_ab`, with no API key. The A/B's second arm once failed the arithmetic rows: a criterion's command takes a
row's value as written, and the `*` row named the hint file the arm adds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .conftest import SystemCli

pytestmark = pytest.mark.slow

REPOSITORY = Path(__file__).parents[2]


@pytest.mark.parametrize("arguments", [("tasks/",), ("-e", "smoke_ab")], ids=["main-job", "smoke-ab"])
def test_the_shipped_tasks_pass(system_cli: SystemCli, arguments: tuple[str, ...]) -> None:
    for folder in ("tasks", "experiments", "datasets"):
        shutil.copytree(REPOSITORY / folder, system_cli.folder / folder)
    outcome = system_cli("run", *arguments, "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 0, outcome.output
    summary = json.loads((system_cli.runs / "latest" / "run.json").read_text())
    assert summary["tasks_run"] == summary["tasks_succeeded"] >= 13
