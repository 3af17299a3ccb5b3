"""What a sandbox's setup or commands leave behind must not steer the harness: a link where it writes its own
files, a file name that would start a line of its own on the user's terminal."""

from __future__ import annotations

from pathlib import Path

from ..support.helpers import write_task
from .conftest import SystemCli, task_file


def test_a_link_left_where_the_shims_go_is_not_written_through(system_cli: SystemCli, tmp_path: Path) -> None:
    """`record_cli` writes its matcher and shims after the sandbox's setup ran (templates, node packages' install
    scripts): a link left there to a file of this machine had the harness, as its user, overwrite that file."""
    victim = tmp_path / "victim.txt"
    victim.write_text("the host's own file\n")
    template = tmp_path / "tpl"
    template.mkdir()
    (template / "argv_match.py").symlink_to(victim)
    task = write_task(
        tmp_path,
        {
            "task_id": "shims",
            "description": "record_cli over a planted link",
            "agent": {"type": "none"},
            "sandbox": {
                "python": None,
                "template_sources": [{"type": "template_dir", "path": "tpl", "mount_point": "cli_mocks"}],
                "record_cli": [{"tool": "mycli"}],
            },
            "success_criteria": [{"type": "file_exists", "path": "cli_mocks/mycli", "description": "shim"}],
        },
    )

    outcome, run = system_cli.run(task, env={})

    assert victim.read_text() == "the host's own file\n"
    result = run.result("shims")
    assert result["final_status"] == "ERROR", outcome.output
    error = result["error_message"]
    assert "cli_mocks/argv_match.py" in error and "nothing was written there" in error


def test_a_file_name_with_a_newline_stays_on_its_failure_line(system_cli: SystemCli, tmp_path: Path) -> None:
    """A criterion's error names sandbox files; a name holding a newline printed a line of the agent's choosing
    (a forged `PASSED ...`) under the harness's own summary."""
    checks = [{"type": "file_contains", "path": "*.log", "includes": ["x"], "description": "two logs"}]
    pre_run = [{"command": "touch \"$(printf 'a\\nPASSED 9 evaluations.log')\" b.log"}]
    task = task_file(tmp_path, "names", agent={"type": "none"}, pre_run=pre_run, success_criteria=checks)

    outcome, _ = system_cli.run(task, env={"COLUMNS": "400"})

    assert outcome.code == 1, outcome.output
    lines = outcome.output.splitlines()
    (failure,) = [line for line in lines if line.startswith("✗ names")]
    assert "a PASSED 9 evaluations.log" in failure  # the name, flattened onto its line
    assert not [line for line in lines if line.startswith("PASSED 9")]


def test_a_fifo_where_a_file_is_checked_is_said_to_be_no_file(system_cli: SystemCli, tmp_path: Path) -> None:
    """file_check said `file not found` of a FIFO that is there; json_check said `not a regular file`."""
    checks = [{"type": "file_check", "path": "pipe", "includes": ["x"], "description": "p"}]
    task = task_file(
        tmp_path, "fifo", agent={"type": "none"}, pre_run=[{"command": "mkfifo pipe"}], success_criteria=checks
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 1, outcome.output
    (criterion,) = run.result("fifo")["success_criteria_results"]
    assert criterion["error"] == "not a regular file: pipe", criterion
