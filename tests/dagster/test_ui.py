"""The Dagster UI, in a real headless Chromium: the asset graph page renders the five assets."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.browser import ARTIFACTS, chromium
from ..support.dagster_services import DagsterServices, prepare_instance

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parent.parent.parent
ASSETS = ["task_definitions", "resolved_tasks", "sandbox_runs", "criteria_scores", "suite_metrics"]


def test_asset_graph_page_renders_the_five_assets(tmp_path: Path) -> None:
    home, workspace = prepare_instance(tmp_path)
    env = {"CODER_EVAL_TASK_PATHS": str(ROOT / "tasks"), "CODER_EVAL_RUNS_DIR": str(tmp_path / "runs")}
    with DagsterServices(home, workspace, env, tmp_path / "logs", daemon=False) as services:
        url = f"http://127.0.0.1:{services.port}/asset-groups"
        dom = chromium(url, "--dump-dom").stdout
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / "asset-graph.png"
        chromium(url, f"--screenshot={shot}")
    missing = [name for name in ASSETS if name not in dom]
    assert not missing, f"not rendered: {missing}"
    assert shot.exists() and shot.stat().st_size > 10_000
