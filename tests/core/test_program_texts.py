"""The programs kept in string literals, run by a Python of their own in a namespace or a container, are outside
ruff and mypy (docs/architecture.md): each compiles, and names nothing it never defines or imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from coder_eval_dagster.core.sandbox.container import FORWARDER
from coder_eval_dagster.core.sandbox.holder import HOLDER
from coder_eval_dagster.core.sandbox.spawner import SPAWNER

PROGRAMS = {"HOLDER": HOLDER, "SPAWNER": SPAWNER, "FORWARDER": FORWARDER}


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_program_compiles_and_names_only_what_it_defines(name: str) -> None:
    text = PROGRAMS[name]
    compile(text, name, "exec")
    flakes = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F", "--stdin-filename", f"{name}.py"]
    done = subprocess.run([*flakes, "-"], input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
