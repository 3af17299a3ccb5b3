"""A run on an instance with an earlier run of the same task: compared without pandas, scipy or matplotlib.

Issue 25: the run-to-run comparison of a one-row run imported pandas and
scipy (about a second) to compare two rows. The installed console script
runs twice on one instance; Python's import log (PYTHONPROFILEIMPORTTIME)
of the second run says what the comparison loaded.
"""

from __future__ import annotations

from pathlib import Path

from ..support.helpers import criterion, task_with, write_task
from .conftest import SystemCli

AGENTLESS = {"agent": {"type": "none"}, "initial_prompt": None, "sandbox": {"python": None}}
HEAVY = {"pandas", "scipy", "matplotlib"}  # for figures, large bootstraps and analysts' frames only


def imported(stderr: str) -> set[str]:
    """The modules an import log (``-X importtime`` lines on stderr) names."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_a_second_run_compares_with_the_first_without_pandas_or_scipy(system_cli: SystemCli, tmp_path: Path) -> None:
    checks = [criterion("run_command", command="true")]
    task = write_task(tmp_path / "tasks", task_with(task_id="warm", success_criteria=checks, **AGENTLESS))
    first = system_cli("run", task, "--runs-dir", system_cli.runs, env={})
    assert first.code == 0, first.output
    second = system_cli("run", task, "--runs-dir", system_cli.runs, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert second.code == 0, second.output
    modules = imported(second.err)
    assert "coder_eval_dagster.core.compare.regression" in modules  # the comparison with the first run ran
    assert not {name for name in modules if name.split(".")[0] in HEAVY}
