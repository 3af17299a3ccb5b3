"""The spend a run reports when only some evaluations' costs are known: a floor, said as one."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .conftest import CLI

ROOT = Path(__file__).parent.parent.parent


def test_a_sum_with_unpriced_parts_is_a_floor_in_the_line_and_in_run_json(tmp_path: Path) -> None:
    # replay_hello's trajectory reports its cost; skill_routing's rows spend tokens nobody priced
    tasks = [str(ROOT / "tasks" / name) for name in ("replay_hello", "skill_routing")]
    done = subprocess.run(
        [str(CLI), "run", *tasks, "--runs-dir", str(tmp_path / "runs")],
        env={**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "COLUMNS": "60"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    spend = [line for line in done.stdout.splitlines() if line.startswith("spend [default]")]
    assert spend == ["spend [default]: agent ≥ $0.0070 (part unknown), judges –, simulated user –; total ≥ $0.0070"], (
        done.stdout
    )
    run = json.loads(next((tmp_path / "runs").glob("*/run.json")).read_text())
    assert run["spend"]["cost_complete"] is False and run["cost_complete"] is False
    assert run["spend"]["agent"]["total_cost_usd"] == 0.007
