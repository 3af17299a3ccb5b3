"""A real headless Chromium for the UI checks (Debian's package, started with the flags this machine needs):
``chromium`` for one-shot dumps and screenshots, ``Chromium`` driven over the DevTools protocol."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
ARTIFACTS = ROOT / "test-artifacts"
# Both ways of running it: no sandbox (containers), no GPU, nothing fetched in the background.
BASE_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1600,1000",
)
CHROMIUM_FLAGS = [*BASE_FLAGS, "--virtual-time-budget=30000"]  # a one-shot dump waits for the page's scripts
# Dagster's "Join the Dagster community" pop-up, dismissed as its Skip button does (in the browser's storage).
NO_COMMUNITY_POPUP = "localStorage.setItem('communityNux', '1')"
# The Dagster UI's enabled Materialize button, where to click it (None until then). Dagster 1.13's production
# build carries no data-testid: the button is found by its words.
MATERIALIZE_BUTTON = """(() => {
  const b = [...document.querySelectorAll('button')].find(e => e.innerText.trim().startsWith('Materialize'));
  if (!b || b.disabled) return null;
  const r = b.getBoundingClientRect();
  return {x: r.x + r.width / 2, y: r.y + r.height / 2};
})()"""


def _binary() -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.fail("chromium missing: .ci/run installs Debian's chromium package")
    return binary


def chromium(url: str, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url],
            capture_output=True,
            text=True,
            timeout=180,
        )


class Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
    JSON messages ending in NUL, read on fd 3 and written on fd 4; no driver library needed."""

    FLAGS = (*BASE_FLAGS, "--remote-debugging-pipe")

    def __init__(self) -> None:
        binary = _binary()
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

    def wait_for(self, expression: str, timeout: float, every: float = 0.25) -> Any:
        """The first truthy value of ``expression``, polled every ``every`` seconds (across a navigation: a poll
        that the page's navigation cuts off is asked again)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except RuntimeError as error:
                if "navigated or closed" not in str(error):
                    raise
                value = None
            if value:
                return value
            time.sleep(every)
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
