"""`coder-eval agents install opencode` run twice at once: the second waits for the first and finds its work."""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from pathlib import Path

from .conftest import CLI


def _ready_installation(root: Path) -> None:
    """The files by which an installation counts as done (what the first install left)."""
    for path in ("npm/node_modules/.bin/opencode", "ripgrep/bin/rg"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")
    (root / "config" / "node_modules").mkdir(parents=True)


def test_an_install_waits_for_one_under_way_and_does_not_install_again(tmp_path: Path) -> None:
    root = tmp_path / "opencode-x"
    lock_path = tmp_path / "opencode-x.lock"
    environment = {**os.environ, "CODER_EVAL_OPENCODE_DIR": str(root), "PATH": "/nonexistent"}  # no npm to run
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # an install under way
        second = subprocess.Popen(
            [str(CLI), "agents", "install", "opencode"], env=environment, stdout=subprocess.PIPE, text=True
        )
        time.sleep(3)
        assert second.poll() is None, "the second install did not wait for the first"
        _ready_installation(root)  # what the first leaves behind
    out, _ = second.communicate(timeout=60)
    assert second.returncode == 0
    assert f"already installed in {root}" in out
