"""A replayed ATIF session's Bash commands name the sandbox where they named the session's working folder: the folder
where it stands whole (a path of its own, or the start of one), never inside a longer name or another path."""

from __future__ import annotations

from typing import Any

import pytest

from coder_eval_dagster.core.atif import replay_trajectory


def session(command: str, cwd: str | None = "/app") -> dict[str, Any]:
    call = {"tool_call_id": "b", "function_name": "Bash", "arguments": {"command": command}}
    step = {"step_id": 1, "source": "agent", "message": "", "tool_calls": [call]}
    return {
        "schema_version": "ATIF-v1.8",
        "agent": {"name": "claude-code", "version": "2", "extra": {"cwds": [cwd] if cwd else []}},
        "steps": [step],
    }


def replayed(command: str, cwd: str | None = "/app") -> str:
    (turn,) = replay_trajectory(session(command, cwd), "s.json", lambda loc: 1).turns
    (call,) = turn.calls
    return str(call.parameters["command"])


UNTOUCHED = "ls /application /app.bak /app-2 /srv/app /srv/app/x ~/app $(pwd)/app"


@pytest.mark.parametrize(
    ("command", "played"),
    [
        ("cat /app/hello.txt", "cat /sandbox/hello.txt"),
        ("cd /app && pytest", "cd /sandbox && pytest"),
        ("echo \"/app\" '/app/x' `ls /app`", "echo \"/sandbox\" '/sandbox/x' `ls /sandbox`"),
        (
            "PATH=/app/bin:$PATH run --dir=/app;(/app/go)|/app/x>/app/log",
            "PATH=/sandbox/bin:$PATH run --dir=/sandbox;(/sandbox/go)|/sandbox/x>/sandbox/log",
        ),
        (UNTOUCHED, UNTOUCHED),
    ],
)
def test_the_working_folder_in_a_command_is_the_sandbox(command: str, played: str) -> None:
    assert replayed(command) == played


def test_no_working_folder_or_the_root_leaves_commands_as_recorded() -> None:
    assert replayed("cat /app/a", cwd=None) == "cat /app/a"
    assert replayed("cat /app/a", cwd="/") == "cat /app/a"
