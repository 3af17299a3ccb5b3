"""The criteria sweep through the installed ``coder-eval``: bad criteria refused in one line each (a huge regex flag
crashed the loader with exit 3), and ``evaluate`` grading a must-not-run guard over a log past the read cap, a
file_check on a folder, commands_efficiency with no agent and a score a last bit short of its threshold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coder_eval_dagster.core.files import CRITERION_READ_CAP

from ..support.helpers import agentless_task, criterion, task_with, write_task
from .conftest import SystemCli

pytestmark = pytest.mark.slow

BAD = [
    criterion("file_matches_regex", path="a", pattern="x", flags=1099511627776),
    criterion("cli_called", verb="x", flags={"a": {"matches_regex": "x", "flags": 1099511627776}}),
    criterion("cli_called", verb="x", flags={"a": {"any_of": []}}, min_count=0, max_count=0),
    criterion("file_exists", path="/etc/passwd"),
    criterion("cli_called", log="../t/cli.yaml", verb="x"),
]
BAD_FIELDS = ["0.flags", "1.flags.a.flags", "2.flags.a.any_of", "3.path", "4.log"]


def test_bad_criteria_are_refused_one_line_each(tmp_path: Path, system_cli: SystemCli) -> None:
    task = write_task(tmp_path, agentless_task(success_criteria=BAD), "bad.yaml")
    validated = system_cli("validate", task, env={})
    assert validated.code == 1, validated.output
    lines = validated.output.strip().splitlines()
    assert [line.split(": ")[1] for line in lines] == [f"success_criteria.{field}" for field in BAD_FIELDS], lines
    assert all(line.startswith(f"{task}:") for line in lines), lines
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    evaluated = system_cli("evaluate", task, workspace, "--run-dir", tmp_path / "ev", env={})
    assert evaluated.code == 2 and "Traceback" not in evaluated.output, evaluated.output
    assert "success_criteria.0.flags" in evaluated.output


def test_evaluate_grades_the_sweeps_cases(tmp_path: Path, system_cli: SystemCli) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "dir").mkdir(parents=True)
    harmless = json.dumps({"tool": "uip", "argv": ["ixp", "projects", "get", "p" * 200]}) + "\n"
    forbidden = json.dumps({"tool": "uip", "argv": ["ixp", "fields", "delete", "proj-1"]}) + "\n"
    (workspace / "calls.jsonl").write_text(harmless * (CRITERION_READ_CAP // len(harmless) + 4000) + forbidden)
    (workspace / "f.txt").write_text("abcdefg X1 X2 X3 X4 X5 X6 X7 X8 X9")
    criteria = [
        criterion("cli_called", log="calls.jsonl", verb="ixp fields delete", min_count=0, max_count=0),
        criterion("file_check", path="dir"),
        criterion("commands_efficiency", expected_commands=4),
        criterion(
            "file_contains",
            path="f.txt",
            includes=list("abcdefghij"),
            excludes=[f"X{n}" for n in range(1, 10)] + ["Y"],
            pass_threshold=0.4,
        ),
    ]
    task = write_task(tmp_path, task_with(success_criteria=criteria, sandbox={"python": None}))  # claude-code
    outcome = system_cli("evaluate", task, workspace, "--run-dir", tmp_path / "ev", env={})
    assert outcome.code == 1, outcome.output
    results = json.loads((tmp_path / "ev/task.json").read_text())["success_criteria_results"]
    guard, folder, efficiency, edge = results
    assert (guard["score"], guard["passed"]) == (0.0, False) and "read only in part" in guard["error"]
    assert (folder["score"], folder["passed"]) == (1.0, True)
    assert efficiency["score"] == 0.0 and "no agent turn records" in efficiency["error"]
    assert edge["score"] == pytest.approx(0.4) and edge["passed"] is True


def test_a_pattern_that_backtracks_without_bound_fails_its_criterion_and_the_others_are_graded(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """An agent can write the file a task author's pattern is run over: ``(a|aa)+c`` over 60 a's would take
    longer than the universe has; ``re`` cannot be stopped, so the scoring step (and the run) hung."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "out.txt").write_text("a" * 60 + "\nHELLO world\ncafé\n")
    criteria = [
        criterion("file_matches_regex", path="out.txt", pattern="(a|aa)+c"),
        criterion("file_matches_regex", path="out.txt", pattern=r"^hello\s+WORLD$", flags=2 | 8),  # IGNORECASE|M
        criterion("file_matches_regex", path="out.txt", pattern=r"^caf\w$", flags=256 | 8, must_match=False),  # ASCII
        criterion("run_command", command="true", timeout=1e300),  # valid; the wait's clock overflowed (a crash)
    ]
    task = write_task(tmp_path, agentless_task(success_criteria=criteria))
    outcome = system_cli("evaluate", task, workspace, "--run-dir", tmp_path / "ev", env={}, timeout=120)
    assert outcome.code == 1 and "Traceback" not in outcome.output, outcome.output
    hung, *others = json.loads((tmp_path / "ev/task.json").read_text())["success_criteria_results"]
    assert hung["score"] == 0.0 and "did not finish within 10 s" in hung["error"], hung
    assert [other["score"] for other in others] == [1.0, 1.0, 1.0], others
