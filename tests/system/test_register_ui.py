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

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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


# ------------------------------------------------------------------ a real headless Chromium, driven over CDP


class Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
    JSON messages ending in NUL, read on fd 3 and written on fd 4; no driver library needed."""

    FLAGS = (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--remote-debugging-pipe",
        "--window-size=1600,1000",
    )

    def __init__(self) -> None:
        binary = shutil.which("chromium") or shutil.which("chromium-browser")
        if binary is None:
            pytest.fail("chromium missing: .ci/run installs Debian's chromium package")
        self.profile = tempfile.TemporaryDirectory()
        to_browser, self.writer = _pipe_above(4)
        self.reader, from_browser = _pipe_above(4)
        # bash moves the pipe ends to fd 3 and 4 (dash takes one-digit descriptors only), then becomes chromium
        moves = f'exec "$@" 3<&{to_browser} 4>&{from_browser} {to_browser}<&- {from_browser}>&-'
        self.process = subprocess.Popen(
            ["bash", "-c", moves, "bash", binary, *self.FLAGS, f"--user-data-dir={self.profile.name}"],
            pass_fds=(to_browser, from_browser),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        os.close(to_browser)
        os.close(from_browser)
        self.buffer, self.next_id, self.session = b"", 0, None

    def __enter__(self) -> Chromium:
        try:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sig)
                self.process.wait(timeout=10)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        os.close(self.writer)
        os.close(self.reader)
        self.profile.cleanup()

    def call(self, method: str, timeout: float = 30, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its answer (events in between are dropped)."""
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self.writer, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.reader], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self.reader, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def evaluate(self, expression: str) -> Any:
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def wait_for(self, expression: str, timeout: float) -> Any:
        """The first truthy value of ``expression``, polled."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.25)
        raise TimeoutError(f"never true: {expression}")

    def click(self, x: float, y: float) -> None:
        """A real left click (pointer moved, pressed, released), as a user's mouse makes it."""
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))


def _pipe_above(lowest: int) -> tuple[int, int]:
    """A pipe whose descriptors are both above ``lowest``, so bash can move them to 3 and 4 safely."""
    read, write = os.pipe()
    moved = (
        fcntl.fcntl(read, fcntl.F_DUPFD_CLOEXEC, lowest + 1),
        fcntl.fcntl(write, fcntl.F_DUPFD_CLOEXEC, lowest + 1),
    )
    os.close(read)
    os.close(write)
    return moved


# The production build carries no data-testid: the button and the dialogs are found by their words.
BUTTON = """(() => {
  const b = [...document.querySelectorAll('button')].find(e => e.innerText.trim().startsWith('Materialize'));
  if (!b || b.disabled) return null;
  const r = b.getBoundingClientRect();
  return {x: r.x + r.width / 2, y: r.y + r.height / 2};
})()"""
PARTITIONS_DIALOG = "Launch runs to materialize sandbox_runs"
FIRST_DIALOG = f"""(() => {{
  const text = document.body.innerText;
  if (text.includes({json.dumps(WARNING)})) return "upstream warning";
  if (text.includes({json.dumps(PARTITIONS_DIALOG)})) return "partitions dialog";
  return null;
}})()"""
# Dagster's "Join the Dagster community" pop-up, dismissed as its Skip button does (in this browser's storage).
NO_COMMUNITY_POPUP = "localStorage.setItem('communityNux', '1')"


def click_materialize(url: str, shot: Path) -> str:
    """Open ``url`` (an asset page), click Materialize, and say which dialog came up first (screenshot: ``shot``)."""
    with Chromium() as browser:
        browser.call("Page.enable")
        browser.call("Page.addScriptToEvaluateOnNewDocument", source=NO_COMMUNITY_POPUP)
        browser.call("Page.navigate", url=url)
        where = browser.wait_for(BUTTON, timeout=60)
        browser.click(where["x"], where["y"])
        try:
            return browser.wait_for(FIRST_DIALOG, timeout=30)
        finally:
            browser.screenshot(shot)
