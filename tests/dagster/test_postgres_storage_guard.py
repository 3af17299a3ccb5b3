"""storage_postgres.py is built on the pinned Dagster's internals too: under another Dagster, one of them moved is
storage.py's one line naming the version to install, never an ImportError from deep inside Dagster."""

from __future__ import annotations

import subprocess
import sys

from coder_eval_dagster.storage import PINNED_DAGSTER

# Another Dagster installed, in which an internal storage_postgres imports has moved.
ANOTHER_DAGSTER = """
import importlib.metadata as metadata, sys
real = metadata.version
metadata.version = lambda name: "1.99.0" if name == "dagster" else real(name)
sys.modules["dagster._core.storage.event_log.schema"] = None
import coder_eval_dagster.storage_postgres
"""


def test_another_dagster_is_refused_in_one_line_naming_the_pinned_version() -> None:
    done = subprocess.run([sys.executable, "-c", ANOTHER_DAGSTER], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: coder_eval_dagster.storage is built on Dagster"), done.stderr
    assert f"install dagster=={PINNED_DAGSTER}" in last
