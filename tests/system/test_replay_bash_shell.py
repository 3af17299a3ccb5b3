"""A replayed Bash call runs under bash, as the recorded session's Bash tool ran it, through the installed CLI.

A Claude Code session's Bash tool is bash: its recording uses ``set -o
pipefail``, ``[[ ... ]]``, ``{a,b}``, ``source .venv/bin/activate`` and
``<(...)``, which /bin/sh (dash) refuses. The replay runs each Bash call with
the bash on the sandbox's PATH, the task's ``record_cli`` shims still first on
it; a sandbox without bash (a docker image) runs it under /bin/sh and says so
in the call's output. ``pre_run``, ``post_run`` and the criteria stay on
/bin/sh, as coder_eval's ``shell=True`` runs them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .conftest import SystemCli, replay_task_file

BASHISMS = (
    'set -o pipefail; [[ -n "$BASH_VERSION" ]] && echo bash=$BASH_VERSION > shell.txt || echo notbash > shell.txt;'
    " echo {a,b} >> shell.txt"
)
SHELL_TXT = {"type": "file_contains", "path": "shell.txt", "includes": ["bash=", "a b"], "description": "bash ran it"}


def calls_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [call for iteration in result["iterations"] for call in iteration["commands"]]


def test_a_replayed_bash_call_runs_under_bash_with_the_shims_first_and_pre_run_stays_on_sh(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    activate = "mkdir -p .venv/bin && echo 'export ACTIVATED=yes' > .venv/bin/activate"
    sourced = 'source .venv/bin/activate && mycli deploy "$ACTIVATED" && cat <(echo from-substitution) > sub.txt'
    task = replay_task_file(
        tmp_path / "tasks",
        "bashisms",
        [{"calls": [{"tool": "Bash", "command": BASHISMS}, {"tool": "Bash", "command": f"{activate} && {sourced}"}]}],
        pre_run=[{"command": 'echo "${BASH_VERSION:-no bash}" > pre_run.txt'}],
        sandbox={"python": None, "record_cli": [{"tool": "mycli", "exit_code": 0, "stdout": "deployed\n"}]},
        success_criteria=[
            SHELL_TXT,
            {"type": "file_contains", "path": "sub.txt", "includes": ["from-substitution"], "description": "<(...)"},
            {"type": "cli_called", "verb": "deploy", "positional": ["yes"], "description": "the shim, sourced env"},
            {"type": "file_contains", "path": "pre_run.txt", "includes": ["no bash"], "description": "pre_run on sh"},
            {"type": "run_command", "command": '[ -z "$BASH_VERSION" ]', "description": "criteria on sh"},
        ],
    )
    outcome, run = system_cli.run(task, env={}, timeout=120)
    result = run.result("bashisms")
    calls = calls_of(result)
    assert [call["result_status"] for call in calls] == ["success", "success"], [c["result_summary"] for c in calls]
    assert "deployed" in calls[1]["result_summary"]
    criteria = result["success_criteria_results"]
    assert len(criteria) == 5 and all(criterion["passed"] for criterion in criteria), criteria
    assert outcome.code == 0, outcome.output


def test_without_bash_in_the_sandbox_a_replayed_bash_call_runs_under_sh_and_says_so(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """The tempdir driver shows this machine's /usr, so bash is hidden here the only way a user could: a PATH
    without it (every other tool linked in), as a docker image without bash has."""
    bin_dir = tmp_path / "bin-without-bash"
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            if entry.name not in ("bash", "rbash") and not (bin_dir / entry.name).exists():
                (bin_dir / entry.name).symlink_to(entry.path)
    task = replay_task_file(
        tmp_path / "tasks",
        "nobash",
        [{"calls": [{"tool": "Bash", "command": "echo plain > plain.txt"}, {"tool": "Bash", "command": BASHISMS}]}],
        success_criteria=[
            {"type": "file_contains", "path": "plain.txt", "includes": ["plain"], "description": "sh ran it"}
        ],
    )
    outcome, run = system_cli.run(task, env={"PATH": str(bin_dir)}, timeout=120)
    calls = calls_of(run.result("nobash"))
    note = "[coder-eval: no bash in the sandbox: this Bash call ran under /bin/sh]"
    assert [call["result_status"] for call in calls] == ["success", "error"], calls
    assert note in calls[0]["result_summary"]
    assert note in calls[1]["result_summary"] and "pipefail" in calls[1]["result_summary"], calls[1]
    assert outcome.code == 0, outcome.output


def test_a_long_recorded_command_full_of_quotes_runs(tmp_path: Path, system_cli: SystemCli) -> None:
    """A file written through a heredoc (80 KB, 20,000 single quotes): quoted into the shell's script, each `'`
    took five bytes, and the call failed with "Argument list too long" where the same pre_run command ran."""
    heredoc = "cat > f.py <<'EOF'\n" + "print('x', 'y')\n" * 5000 + "EOF\nwc -l < f.py"
    task = replay_task_file(
        tmp_path / "tasks",
        "long",
        [{"calls": [{"tool": "Bash", "command": c} for c in (heredoc, "echo a \\\n", "echo b \\")]}],
        success_criteria=[{"type": "file_exists", "path": "f.py", "description": "written"}],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    call, continued, literal = calls_of(run.result("long"))
    assert call["result_status"] == "success" and "5000" in (call["result_summary"] or ""), call
    assert (continued["result_summary"] or "").strip() == "a", continued  # a line continuation at the end, as bash
    assert (literal["result_summary"] or "").strip() == "b \\", literal  # a last backslash alone is text
