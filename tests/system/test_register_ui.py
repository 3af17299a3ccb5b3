"""After `coder-eval register`, the UI launches sandbox_runs without "upstream ... not been materialized".

Dagster's UI (LaunchAssetExecutionButton.tsx, 1.13) asks, before it opens
the partitions dialog, for the latest materialization of every direct
upstream asset outside the selection (``LaunchAssetCheckUpstreamQuery``:
``assetMaterializations(limit: 1)``) and shows an "Are you sure?" dialog
naming each materializable one that has none. The test registers the
shipped tasks with the installed console script on a fresh instance,
serves it with a real webserver, asks that same query, checks that every
registered partition of the upstream assets counts as materialized, and
clicks Materialize on the asset page in a real headless Chromium.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..support.browser import MATERIALIZE_BUTTON, NO_COMMUNITY_POPUP, Chromium
from ..support.dagster_services import DagsterServices

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent.parent
BIN = Path(sys.executable).parent
ARTIFACTS = ROOT / "test-artifacts"

# The UI's own query (ui-core/src/assets/LaunchAssetExecutionButton.tsx), verbatim.
LAUNCH_ASSET_CHECK_UPSTREAM_QUERY = """
  query LaunchAssetCheckUpstreamQuery($assetKeys: [AssetKeyInput!]!) {
    assetNodes(assetKeys: $assetKeys, loadMaterializations: true) {
      id
      assetKey {
        path
      }
      isMaterializable
      opNames
      graphName
      assetMaterializations(limit: 1) {
        runId
      }
    }
  }
"""
NODES = """
query Nodes($keys: [AssetKeyInput!]!) {
  assetNodes(assetKeys: $keys) {
    assetKey { path }
    dependencyKeys { path }
    partitionStats { numMaterialized numPartitions }
  }
}
"""
WARNING = "have not been materialized"


def register(home: Path) -> str:
    """`coder-eval register tasks/` on the instance at ``home``, as a user runs it."""
    done = subprocess.run(
        [str(BIN / "coder-eval"), "register", str(ROOT / "tasks")],
        env={**os.environ, "DAGSTER_HOME": str(home)},
        cwd=home.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def write_workspace(folder: Path) -> Path:
    workspace = folder / "workspace.yaml"
    workspace.write_text(
        "load_from:\n  - python_module:\n      module_name: coder_eval_dagster.definitions\n"
        f"      attribute: defs\n      working_directory: {ROOT}\n"
    )
    return workspace


def nodes(services: DagsterServices, *names: str) -> dict[str, dict[str, Any]]:
    keys = [{"path": [name]} for name in names]
    found = services.graphql(NODES, {"keys": keys})["assetNodes"]
    return {node["assetKey"]["path"][-1]: node for node in found}


def unmaterialized_upstream(services: DagsterServices, asset: str) -> list[str]:
    """What the UI's "Are you sure?" dialog would list before launching ``asset`` (its own query and filter)."""
    upstream = nodes(services, asset)[asset]["dependencyKeys"]
    answer = services.graphql(LAUNCH_ASSET_CHECK_UPSTREAM_QUERY, {"assetKeys": upstream})["assetNodes"]
    return [a["assetKey"]["path"][-1] for a in answer if a["isMaterializable"] and not a["assetMaterializations"]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DagsterServices, int]]:
    """A fresh instance after `coder-eval register tasks/`, served by a real webserver; the row-task count."""
    folder = tmp_path_factory.mktemp("register_ui")
    out = register(folder / "home")
    row_tasks = int(out.split("registered ")[1].split(" ")[0])
    env = {"CODER_EVAL_TASK_PATHS": str(ROOT / "tasks"), "CODER_EVAL_RUNS_DIR": str(folder / "runs")}
    with DagsterServices(folder / "home", write_workspace(folder), env, folder / "logs", daemon=False) as services:
        yield services, row_tasks


def test_the_ui_query_finds_every_upstream_materialized(served: tuple[DagsterServices, int]) -> None:
    services, row_tasks = served
    assert unmaterialized_upstream(services, "sandbox_runs") == []
    assert unmaterialized_upstream(services, "resolved_tasks") == []
    stats = nodes(services, "resolved_tasks", "sandbox_runs")
    assert stats["resolved_tasks"]["partitionStats"] == {"numMaterialized": row_tasks, "numPartitions": row_tasks}
    assert stats["sandbox_runs"]["partitionStats"]["numMaterialized"] == 0  # nothing ran


def test_materialize_opens_the_partitions_dialog_without_a_warning(served: tuple[DagsterServices, int]) -> None:
    services, _ = served
    shot = ARTIFACTS / "register-materialize.png"
    shown = click_materialize(f"http://127.0.0.1:{services.port}/assets/sandbox_runs", shot)
    assert shown == "partitions dialog", f"the UI showed the {shown} first (screenshot: {shot})"


# The production build carries no data-testid: the dialogs are found by their words.
PARTITIONS_DIALOG = "Launch runs to materialize sandbox_runs"
FIRST_DIALOG = f"""(() => {{
  const text = document.body.innerText;
  if (text.includes({json.dumps(WARNING)})) return "upstream warning";
  if (text.includes({json.dumps(PARTITIONS_DIALOG)})) return "partitions dialog";
  return null;
}})()"""


def click_materialize(url: str, shot: Path) -> str:
    """Open ``url`` (an asset page), click Materialize, and say which dialog came up first (screenshot: ``shot``)."""
    with Chromium() as browser:
        browser.call("Page.enable")
        browser.call("Page.addScriptToEvaluateOnNewDocument", source=NO_COMMUNITY_POPUP)
        browser.call("Page.navigate", url=url)
        where = browser.wait_for(MATERIALIZE_BUTTON, timeout=60)
        browser.click(where["x"], where["y"])
        try:
            return browser.wait_for(FIRST_DIALOG, timeout=30)
        finally:
            browser.screenshot(shot)
