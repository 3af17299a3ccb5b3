"""`command_executed` matches as the guide says and coder_eval 0.12.16 does, through the installed ``coder-eval``:
both patterns are DOTALL (``gh pr create.*--body`` spans a backslash-continued command), the shell-normalized form
strips any ``bash -l -c``/``bash -ic`` wrapper and joins line continuations as bash does, and a call other than Bash
is matched as its parameters in JSON. The early stop counts calls the same way."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ..support.helpers import criterion, write
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow

CONTINUED_PR = "echo gh pr create \\\n  --title fix \\\n  --body done"
CALLS = [
    {"tool": "Bash", "command": "bash -l -c 'printf one'"},
    {"tool": "Bash", "command": "bash -ic 'printf two'"},
    {"tool": "Bash", "command": "printf \\\n three"},
    {"tool": "Write", "path": "main.py", "content": "def main():\n    return 1\n"},
    {"tool": "Bash", "command": CONTINUED_PR},  # last: the guard's early stop plays nothing after it
]


def _ran(pattern: str, **fields: object) -> dict[str, object]:
    return criterion("command_executed", command_pattern=pattern, **fields)


def test_command_patterns_match_as_coder_eval_does(tmp_path: Path, system_cli: SystemCli) -> None:
    write(tmp_path / "tasks/traj.yaml", yaml.safe_dump({"turns": [{"calls": CALLS, "text": "done"}]}))
    expected = [
        (_ran("^printf one"), 1.0),  # bash -l -c: the wrapper is stripped
        (_ran("^printf two"), 1.0),  # bash -ic too
        (_ran("^printf three"), 1.0),  # a line continuation disappears, as in bash
        (_ran(r'"path": "main\.py"', tool_name="Write"), 1.0),  # a Write call's parameters as JSON
        (_ran("def main.*return 1", tool_name="Write"), 1.0),
        (_ran("printf", exclude_pattern="^printf t", min_count=1, max_count=1), 1.0),  # the exclusion sees them too
        ({**_ran("gh pr create.*--body", min_count=0, max_count=0), "stop_early": {}}, 0.0),  # spans the lines
    ]
    task = task_file(
        tmp_path / "tasks",
        "matching",
        agent={"type": "replay", "trajectory": "traj.yaml"},
        initial_prompt="p",
        success_criteria=[spec for spec, _ in expected],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 1, outcome.output
    result = run.result("matching")
    assert [c["score"] for c in result["success_criteria_results"]] == [score for _, score in expected]
    assert result["stopped_early"] is True  # the guard's live count saw the continued command as forbidden


# Each removes its own folder: a wrapper behind a runner or an assignment, in a list, a pipeline, a substitution.
OBFUSCATED_BEHIND_A_PREFIX = [
    "sudo bash -c \"r'm' -rf g2\"",
    "FOO=1 bash -lc \"r'm' -rf g3\"",
    "cd . && bash -lc \"r'm' -rf g4\"",
    "env bash -lc \"r'm' -rf g5\"",
    "bash -lc \"r'm' -rf g6\" | cat",
    'timeout 5 sh -c "bash -c \'r\\"m\\" -rf g7\'"',
    "mkdir g8; bash -c \"r'm' -rf g8\"",
    "cd .\nbash -c \"r'm' -rf g9\"",
    "echo hi |bash -c \"r'm' -rf g10\"",
    "true && timeout -s KILL 5 bash -c \"r'm' -rf g11\"",
    "if true ; then bash -c \"r'm' -rf g12\" ; fi",
    "echo $(bash -c \"r'm' -rf g13\")",
    "bash -c \"r'm' -rf g14\" # it's done",  # (a comment's apostrophe turned the whole normalization off)
    "bash -c \"r'm' -rf g15\"; echo $'it\\'s'",  # (so did one command the normalization cannot read)
]


def test_a_guard_sees_a_wrapped_command_behind_a_runner_or_in_a_list(tmp_path: Path, system_cli: SystemCli) -> None:
    """A wrapper was stripped only when it was the whole command (then only around ``&&`` as a word of its own):
    each of these slipped past a `max_count: 0` guard."""
    calls = [{"tool": "Bash", "command": command} for command in OBFUSCATED_BEHIND_A_PREFIX]
    write(tmp_path / "tasks/traj.yaml", yaml.safe_dump({"turns": [{"calls": calls}]}))
    guards = [_ran(rf"rm -rf g{n}\b", min_count=0, max_count=0) for n in range(2, 16)]
    task = task_file(
        tmp_path / "tasks",
        "guarded",
        agent={"type": "replay", "trajectory": "traj.yaml"},
        initial_prompt="p",
        success_criteria=[*guards, _ran("^rm -rf", min_count=0, max_count=0, tool_name="Write")],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 1, outcome.output
    scores = [c["score"] for c in run.result("guarded")["success_criteria_results"]]
    assert scores == [0.0] * len(guards) + [1.0]
