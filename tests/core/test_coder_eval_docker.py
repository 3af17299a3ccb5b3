"""coder_eval's sandbox forms under the docker driver: the reference and task folders and the CLI shims in the container."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.helpers import criterion, docker_sandbox, evaluate_replay, write

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("docker_image")]


def test_the_reference_folder_and_the_shims_work_inside_the_container(tmp_path: Path) -> None:
    write(tmp_path / "ref/expected.txt", "42\n")
    sandbox = docker_sandbox(record_cli=[{"tool": "uip", "responses": [{"when": {"verb": "ping"}, "stdout": "pong"}]}])
    turns = [
        {
            "calls": [
                {"tool": "Bash", "command": "test -f /.dockerenv && uip ping > pong.txt"},
                {"tool": "Bash", "command": 'echo "ref=$REFERENCE_DIR" > seen.txt'},
            ]
        }
    ]
    checks = [
        {**criterion("run_command", command='test -f /.dockerenv && cat "$REFERENCE_DIR/expected.txt"'), "weight": 1},
        criterion("cli_called", verb="ping"),
        criterion("file_contains", path="pong.txt", includes=["pong"]),
        criterion("file_contains", path="seen.txt", includes=["ref=\n"]),
        criterion("run_command", command='test "$REFERENCE_DIR" != "$TASK_DIR" && cat "$TASK_DIR/ref/expected.txt"'),
    ]
    result = evaluate_replay(tmp_path, turns, sandbox=sandbox, reference={"directory": "ref"}, success_criteria=checks)
    assert result.final_status == "SUCCESS", (result.error, [(c.type, c.score, c.error) for c in result.criteria])
    assert result.criteria[0].details["stdout"] == result.criteria[4].details["stdout"] == "42\n"
    log = (tmp_path / "run/default/t/01/sandbox/cli_mocks/calls.jsonl").read_text().splitlines()
    assert [json.loads(line)["argv"] for line in log] == [["ping"]]
