"""The Dagster UI, in a real headless Chromium: the asset graph page renders the five assets."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from .dagster_services import DagsterServices, prepare_instance

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parent.parent
ARTIFACTS = ROOT / "test-artifacts"
ASSETS = ["task_definitions", "resolved_tasks", "sandbox_runs", "criteria_scores", "suite_metrics"]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=30000",
    "--window-size=1600,1000",
]


def chromium(url: str, *args: str) -> subprocess.CompletedProcess:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.fail("chromium missing: .ci/run installs Debian's chromium package")
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url],
            capture_output=True,
            text=True,
            timeout=180,
        )


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
