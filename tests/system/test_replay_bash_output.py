"""A replayed Bash call's output is the text Claude Code's Bash tool gives the model, through the installed CLI.

The expected texts were measured through the bundled Claude Code CLI against a scripted model (its tool_result
for each command, as tests/system/test_claude_code_call_outputs.py reads them): one stream of stdout and stderr in
the order written, leading blank lines and trailing white space dropped, and a line for a silent command. The
replay kept stdout's last newline and put all of stderr after all of stdout.
"""

from __future__ import annotations

from pathlib import Path

from .conftest import SystemCli, replay_task_file

# command -> (status, the text the model received from Claude Code's Bash tool)
MEASURED = {
    "printf '\\n\\n  a  \\n\\nb  \\n\\n\\n'": ("success", "  a  \n\nb"),
    "printf 'x\\t \\n'": ("success", "x"),
    "printf '\\n'": ("success", "(Bash completed with no output)"),
    "printf 'o'; printf 'e\\n\\n' >&2; exit 2": ("error", "Exit code 2\noe"),
    "printf 'o\\n\\n'; printf '\\n e \\n\\n' >&2": ("success", "o\n\n\n e"),
    "kill -9 $$": ("error", "Exit code 137"),  # (not measured: a signal's end as a shell says it, 128 + N)
}


def test_a_replayed_bash_call_returns_what_claude_codes_bash_tool_returns(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    calls = [{"tool": "Bash", "command": command} for command in MEASURED]
    task = replay_task_file(
        tmp_path / "tasks",
        "outputs",
        [{"calls": calls}],
        success_criteria=[{"type": "run_command", "command": "true", "description": "played"}],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    played = [call for iteration in run.result("outputs")["iterations"] for call in iteration["commands"]]
    assert [(call["result_status"], call["result_summary"]) for call in played] == list(MEASURED.values())


def test_a_recorded_call_whose_text_is_null_or_a_list_is_refused_at_its_line(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """``content:`` left empty (null) wrote the file ``None``; ``command: [echo, hi]`` ran ``['echo', 'hi']``."""
    calls = [{"tool": "Write", "path": "a.txt", "content": None}, {"tool": "Bash", "command": ["echo", "hi"]}]
    task = replay_task_file(
        tmp_path / "tasks",
        "nulls",
        [{"calls": calls}],
        success_criteria=[{"type": "run_command", "command": "true", "description": "played"}],
    )
    validated = system_cli("validate", task, env={})
    assert validated.code == 1, validated.output
    assert [line.split(": ", 1)[1] for line in sorted(validated.err.splitlines())] == [
        "turns.0.calls.0.content: must be text, got nothing (null): write '' for none",
        "turns.0.calls.1.command: must be text, got ['echo', 'hi']",
    ]
