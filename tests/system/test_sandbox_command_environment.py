"""What a sandbox command starts with: a shell's signal dispositions, node's tools (as coder_eval sets them up), as a
user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def test_a_pipeline_into_head_ends_when_head_does(system_cli: SystemCli) -> None:
    """The spawner is a Python program, which ignores SIGPIPE: a command that inherited that wrote on into a closed
    pipe (`yes | head -n 1` ran until its timeout, `I/O error` flooding its stderr, and the evaluation was an
    ERROR). Commands get SIGPIPE and SIGXFSZ at their defaults, in pre_run and in the criteria."""
    folder = system_cli.folder / "tasks"
    task_file(
        folder,
        "piped",
        agent={"type": "none"},
        pre_run=[{"command": "while :; do echo y; done | head -n 1 > a.txt", "timeout": 20}],
        success_criteria=[
            {"type": "run_command", "command": "grep -q ^y a.txt && grep SigIgn /proc/self/status", "description": "a"},
            {"type": "run_command", "command": "yes | head -n 1", "expected_stdout": "y", "description": "b"},
        ],
    )
    outcome, run = system_cli.run(folder, env={})
    assert outcome.code == 0, outcome.output
    result = run.result("piped")
    assert result["pre_run_results"][0]["duration_seconds"] < 5
    ignored = int(result["success_criteria_results"][0]["evidence"]["stdout"].split()[-1], 16)
    assert not ignored & (1 << 12 | 1 << 24), hex(ignored)  # SIGPIPE (13) and SIGXFSZ (25) not ignored


@pytest.mark.skipif(not Path("/usr/bin/npm").exists(), reason="needs npm on this machine")
def test_the_node_packages_tools_are_on_the_criteria_path(system_cli: SystemCli) -> None:
    """coder_eval puts the sandbox's node_modules/.bin on a criterion's PATH, empties NODE_PATH and gives npm a
    sandbox-local prefix: a task whose check runs a tool its node packages installed (`tsc --noEmit`) exited 127."""
    folder = system_cli.folder / "tasks"
    write(folder / "pkg/package.json", json.dumps({"name": "padder", "version": "1.0.0", "bin": {"pad": "cli.js"}}))
    write(folder / "pkg/cli.js", "#!/usr/bin/env node\nconsole.log('pad-ok');\n")
    package = {"type": "template_dir", "path": "pkg", "mount_point": "pkg"}
    check = "pad && echo NODE_PATH=[$NODE_PATH] NPM_CONFIG_PREFIX=$NPM_CONFIG_PREFIX"
    task_file(
        folder,
        "tooled",
        agent={"type": "none"},
        pre_run=[],
        sandbox={"python": None, "template_sources": [package], "node": {"env_packages": ["./pkg"]}},
        success_criteria=[{"type": "run_command", "command": check, "description": "the package's tool"}],
    )
    outcome, run = system_cli.run(folder, env={})
    assert outcome.code == 0, outcome.output
    stdout = run.result("tooled")["success_criteria_results"][0]["evidence"]["stdout"]
    assert stdout.split() == ["pad-ok", "NODE_PATH=[]", "NPM_CONFIG_PREFIX=/sandbox/.npm-prefix"]


def test_the_shell_numbers_a_criterions_lines_as_written(system_cli: SystemCli) -> None:
    """The folders staged for a criterion ($TASK_DIR here) are exported on its first line: the shell's messages
    name the author's line 1, not line 2, as coder_eval's do."""
    folder = system_cli.folder / "tasks"
    check = {"type": "run_command", "command": "test -d $TASK_DIR && no_such_tool_x", "description": "a"}
    task_file(folder, "lines", agent={"type": "none"}, success_criteria=[check])
    outcome, run = system_cli.run(folder, env={})
    assert outcome.code == 1, outcome.output
    stderr = run.result("lines")["success_criteria_results"][0]["evidence"]["stderr"]
    assert stderr.strip() == "/bin/sh: 1: no_such_tool_x: not found", stderr
