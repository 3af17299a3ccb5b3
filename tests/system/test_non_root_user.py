"""The installed CLI run as an ordinary user, as a task author runs it on a laptop.

The test runs as root: ``unshare --user --map-user=1000`` gives the CLI a user
that is not root and holds no capability, whose files are the ones it owns
(the venv included), as a non-root user's are. In a namespace such a user
makes, setgroups is denied: nsenter's own call to it failed, and with it
every command entered through nsenter (every agent CLI, ``evaluate``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import SystemCli, claude_code_task, probing_session, task_file

pytestmark = pytest.mark.slow

AS_A_USER = ["unshare", "--user", "--map-user=1000", "--map-group=1000", "--"]


def test_evaluate_and_a_claude_code_run_work_as_an_ordinary_user(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    echo = {"type": "run_command", "command": "id -u && echo ok", "expected_stdout": "0\nok", "description": "ran"}
    task = task_file(tmp_path / "tasks", "one", agent={"type": "none"}, success_criteria=[echo])
    graded = tmp_path / "graded"
    graded.mkdir()
    evaluated = system_cli("evaluate", task, graded, "--runs-dir", system_cli.runs, env={}, prefix=AS_A_USER)
    assert evaluated.code == 0, evaluated.output
    assert "All criteria passed" in evaluated.out

    fake = scripted_anthropic(probing_session())
    agent_task = claude_code_task(tmp_path / "agents", "claude")
    key = "sk-ant-test-" + "x" * 24
    env = {"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": fake.url, "CLAUDE_CODE_MAX_RETRIES": "0"}
    ran = system_cli("run", agent_task, "--runs-dir", system_cli.runs, env=env, prefix=AS_A_USER)
    assert ran.code == 0, ran.output
    assert "setgroups" not in ran.output


def test_a_setuid_program_in_a_folder_the_agent_made_unreadable_loses_its_bit(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """Run as an ordinary user, the harness could not list a folder the agent had made search-only (`chmod 311`):
    the setuid program in it kept its bit, and anyone could run it by name."""
    from .conftest import replay_task_file

    made = "mkdir hidden && cp /bin/true hidden/x && chmod 4755 hidden/x && chmod 311 hidden && echo made"
    task = replay_task_file(
        tmp_path / "tasks",
        "hidden",
        [{"calls": [{"tool": "Bash", "command": made}]}],
        success_criteria=[{"type": "run_command", "command": "true", "description": "ran"}],
    )
    ran = system_cli("run", task, "--runs-dir", system_cli.runs, env={}, prefix=AS_A_USER)
    assert ran.code == 0, ran.output
    program = system_cli.runs / "latest/default/hidden/00/sandbox/hidden/x"
    assert not program.stat().st_mode & 0o6000
