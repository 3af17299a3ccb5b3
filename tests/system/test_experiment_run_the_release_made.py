"""An experiment run the released coder_eval made, read by our `report` and rebuilt by our `report --rebuild`.

Its run.json names no experiment (its experiment.json does) and its rows carry the agent block each evaluation's
task.json recorded (``agent_config``): we report the experiment, and a rebuild keeps both.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from . import test_coder_eval_oracle as release
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.xdist_group("coder-eval-oracle")  # one worker: the install runs once
oracle = release.oracle  # the released coder-eval, installed by its script (a skip without Python 3.13)


def agent_blocks(run_dir: Path) -> dict[tuple[str, str], Any]:
    rows = json.loads((run_dir / "run.json").read_text())["task_results"]
    return {(row["variant_id"], row["task_id"]): row["agent_config"] for row in rows}


def test_report_and_rebuild_keep_the_experiment_and_agent_blocks_of_its_run(
    oracle: Path, system_cli: SystemCli
) -> None:
    tasks = [task_file(system_cli.folder / "tasks", name, agent={"type": "none"}) for name in ("a", "b")]
    experiment = system_cli.folder / "experiments" / "ab.yaml"
    experiment.parent.mkdir()
    experiment.write_text("experiment_id: ab-test\nvariants:\n  - variant_id: base\n  - variant_id: other\n")
    made = release.run_oracle(
        oracle, system_cli, "run", *map(str, tasks), "-e", str(experiment), "--run-dir", "oruns/r2"
    )
    assert made.returncode == 0, made.stdout + made.stderr
    run_dir = system_cli.folder / "oruns" / "r2"
    written = agent_blocks(run_dir)
    assert len(written) == 4 and all(block["type"] == "none" for block in written.values()), written

    shown = system_cli("report", run_dir, env={})
    assert shown.code == 0, shown.output
    assert "experiment: ab-test" in shown.output, shown.output  # before: experiment: none
    for kept_run_json in (True, False):  # the window from its run.json; else from its task.json files
        copy = system_cli.folder / f"copy-{kept_run_json}" / "r2"
        shutil.copytree(run_dir, copy)
        if not kept_run_json:
            (copy / "run.json").unlink()
        rebuilt = system_cli("report", copy, "--rebuild", env={})
        assert rebuilt.code == 0, rebuilt.output
        assert json.loads((copy / "run.json").read_text())["experiment"] == "ab-test"  # before: null
        assert agent_blocks(copy) == written  # before: every agent_config null
