"""The criteria sweep's findings: regex flags, paths out of their folder, `any_of: []` and a reference_comparison's
overridden threshold refused or said at load; a cli_called guard over a log read in part, file_check's
existence-only form on a folder, commands_efficiency without tool calls, and a score a last bit short of its
threshold, at grading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.check_context import CheckContext
from coder_eval_dagster.core.files import CRITERION_READ_CAP
from coder_eval_dagster.core.models.results import ToolCallRecord, TurnRecord
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.problems import Problem
from coder_eval_dagster.core.resolution import Resolution, resolve
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.run_spec import RunSpec
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox

from ..support.helpers import agentless_task, check_criterion, criterion, task_with, write, write_task


def _resolved(folder: Path, data: dict[str, Any]) -> Resolution:
    write(folder / "ref/solution.py", "x = 1\n")
    return resolve(RunSpec(task_paths=[str(write_task(folder, data))]))


def _problems(folder: Path, *criteria: dict[str, Any], **task: Any) -> list[Problem]:
    return _resolved(folder, task_with(success_criteria=list(criteria), **task)).problems


# ----------------------------------------------------------------------------- regex flags at load


def _flagged(where: str, flags: int) -> tuple[dict[str, Any], str]:
    """A criterion of kind ``where`` with regex ``flags``, and the field they are at."""
    if where == "file_check patterns":
        return criterion("file_check", path="a", patterns=[{"pattern": "x", "flags": flags}]), "patterns.0.flags"
    if where == "cli_called":
        return criterion("cli_called", verb="x", flags={"a": {"matches_regex": "x", "flags": flags}}), "flags.a.flags"
    return criterion("file_matches_regex", path="a", pattern="x", flags=flags), "flags"


FLAGGED = ["file_matches_regex", "file_check patterns", "cli_called"]


@pytest.mark.parametrize("where", FLAGGED)
@pytest.mark.parametrize(
    ("flags", "why"),
    [
        (1099511627776, "not a sum of re flags"),  # past a C int: the loader crashed (exit 3)
        (1024, "not a sum of re flags"),
        (128, "re.DEBUG"),  # it printed the parse tree onto validate's stdout
        (4, "LOCALE"),  # reported at the pattern before
        (288, "ASCII and UNICODE"),
    ],
)
def test_regex_flags_outside_re_are_refused_at_the_flags(tmp_path: Path, where: str, flags: int, why: str) -> None:
    made, field = _flagged(where, flags)
    (problem,) = _problems(tmp_path, made)
    assert problem.field == f"success_criteria.0.{field}" and why in problem.message, problem


def test_every_re_flag_a_text_pattern_takes_is_accepted(tmp_path: Path) -> None:
    flags = 2 | 8 | 16 | 64 | 256  # IGNORECASE MULTILINE DOTALL VERBOSE ASCII; UNICODE (32) excludes ASCII
    assert _problems(tmp_path, *(_flagged(where, flags)[0] for where in FLAGGED)) == []
    assert _problems(tmp_path, _flagged("file_matches_regex", 32)[0]) == []


def test_an_empty_any_of_is_refused(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, criterion("cli_called", verb="x", flags={"a": {"any_of": []}}, max_count=0))
    assert problem.field == "success_criteria.0.flags.a.any_of" and "at least 1 item" in problem.message


# ----------------------------------------------------------------------------- paths out of their folder at load

OUT_OF_FOLDER = {
    "reference_file": criterion("reference_comparison", agent_file="a.py", reference_file="../t/refc.yaml"),
    "path": criterion("file_exists", path="/etc/passwd"),
    "path (..)": criterion("file_contains", path="sub/../../x", includes=["x"]),
    "path (glob)": criterion("file_exists", path="**/../*.txt"),
    "log": criterion("cli_called", log="../t/cli.yaml", verb="x", max_count=0, min_count=0),
    "json_schema": criterion("json_check", path="a.json", json_schema="../x"),
    "agent_file": criterion("reference_comparison", agent_file="/tmp/a.py"),
    "files.0": criterion("llm_judge", prompt="p", files=["../x"]),
    "files.0 ($REFERENCE_DIR)": criterion("llm_judge", prompt="p", files=["$REFERENCE_DIR/../x"]),
    "files.0 ($TASK_DIR)": criterion("llm_judge", prompt="p", files=["$TASK_DIR//etc/passwd"]),
}


@pytest.mark.parametrize("case", OUT_OF_FOLDER)
def test_a_path_out_of_its_folder_is_refused_at_its_field(tmp_path: Path, case: str) -> None:
    (problem,) = _problems(tmp_path, OUT_OF_FOLDER[case], reference={"directory": "ref"})
    assert problem.field == f"success_criteria.0.{case.split()[0]}" and problem.line is not None, problem
    assert "not absolute" in problem.message, problem


def test_paths_that_stay_inside_their_folder_are_accepted(tmp_path: Path) -> None:
    inside = [
        criterion("file_exists", path="sub/../a.txt"),
        criterion("file_exists", path="**/a.txt"),
        criterion("reference_comparison", agent_file="./a.py", reference_file="sub/../solution.py"),
        criterion("llm_judge", prompt="p", files=["$TASK_DIR/../shared/rubric.md", "$REFERENCE_DIR/solution.py"]),
    ]
    assert _problems(tmp_path, *inside, reference={"directory": "ref"}) == []


def test_a_row_path_is_checked_once_the_row_fills_it(tmp_path: Path) -> None:
    rows = [{"id": "inside", "p": "a.txt"}, {"id": "outside", "p": "../a.txt"}]
    data = agentless_task(success_criteria=[criterion("file_exists", path="${row.p}")], dataset={"rows": rows})
    (problem,) = _resolved(tmp_path, data).problems
    assert problem.field == "success_criteria.0.path" and "'outside'" in problem.message, problem


# ----------------------------------------------------------------------------- reference_comparison's threshold


def test_a_pass_threshold_that_similarity_threshold_overrides_is_warned_about(tmp_path: Path) -> None:
    compare = criterion("reference_comparison", agent_file="a.py", pass_threshold=1.0, similarity_threshold=0.5)
    result = _resolved(tmp_path, task_with(success_criteria=[compare], reference={"code": "x = 1"}))
    (warning,) = result.warnings
    assert warning.field == "success_criteria.0.pass_threshold" and warning.message.startswith("warning: ")
    assert "similarity_threshold (0.5)" in warning.message
    assert result.row_tasks[0].task.success_criteria[0].pass_threshold == 0.5  # kept: as coder_eval
    agreeing = {**compare, "pass_threshold": 0.5}
    assert _resolved(tmp_path, task_with(success_criteria=[agreeing], reference={"code": "x = 1"})).warnings == []


# ----------------------------------------------------------------------------- grading


@pytest.fixture
def sandbox(tmp_path: Path) -> TempdirSandbox:
    box = TempdirSandbox(tmp_path / "sandbox", SandboxConfig(python=None))
    box.root.mkdir()
    return box


def _ctx(sandbox: TempdirSandbox, trajectory: list[TurnRecord] | None = None) -> CheckContext:
    return CheckContext(sandbox, sandbox.root.parent, trajectory, run=RunContext.create())


def _record(*argv: str) -> str:
    return json.dumps({"tool": "uip", "argv": list(argv)}) + "\n"


def test_a_must_not_run_guard_over_a_log_read_in_part_fails(sandbox: TempdirSandbox) -> None:
    harmless = _record("ixp", "projects", "get", "p" + "x" * 200)
    lines = CRITERION_READ_CAP // len(harmless) + 4000  # 9 MiB or so, then the forbidden call
    (sandbox.root / "calls.jsonl").write_text(harmless * lines + _record("ixp", "fields", "delete", "proj-1"))
    guard = {"type": "cli_called", "log": "calls.jsonl", "verb": "ixp fields delete", "min_count": 0, "max_count": 0}
    result = check_criterion(guard, _ctx(sandbox))
    assert (result.score, result.passed) == (0.0, False)
    assert "read only in part" in str(result.error) and "max_count 0" in str(result.error)
    positive = check_criterion({**guard, "verb": "ixp projects get", "min_count": 1, "max_count": None}, _ctx(sandbox))
    assert positive.passed  # what was read proves it


def test_file_check_with_no_sub_check_is_file_exists(sandbox: TempdirSandbox) -> None:
    (sandbox.root / "dir").mkdir()
    for kind in ("file_check", "file_exists"):
        assert check_criterion({"type": kind, "path": "dir"}, _ctx(sandbox)).score == 1.0, kind
    content = check_criterion({"type": "file_check", "path": "dir", "includes": ["x"]}, _ctx(sandbox))
    assert content.score == 0.0 and "dir is a folder" in str(content.error)


def test_commands_efficiency_needs_an_agent_run_and_scores_no_call_0(sandbox: TempdirSandbox) -> None:
    spec = {"type": "commands_efficiency", "expected_commands": 4}
    agentless = check_criterion(spec, _ctx(sandbox))
    assert agentless.score == 0.0 and "no agent turn records" in str(agentless.error)
    idle = check_criterion(spec, _ctx(sandbox, [TurnRecord(index=1, calls=[])]))
    assert (idle.score, idle.error, idle.details["actual_commands"]) == (0.0, None, 0)  # as task.json's figure
    call = ToolCallRecord(turn=1, seq=0, tool="Bash", parameters={"command": "ls"})
    assert check_criterion(spec, _ctx(sandbox, [TurnRecord(index=1, calls=[call] * 8)])).score == 0.5


def test_a_score_a_last_bit_short_of_its_threshold_passes(sandbox: TempdirSandbox) -> None:
    forbidden = [f"X{n}" for n in range(1, 10)]
    (sandbox.root / "f.txt").write_text("abcdefg " + " ".join(forbidden))
    spec = {
        "type": "file_contains",
        "path": "f.txt",
        "includes": list("abcdefghij"),  # 7 of 10 found
        "excludes": [*forbidden, "Y"],  # 1 of 10 absent
        "pass_threshold": 0.4,
    }
    result = check_criterion(spec, _ctx(sandbox))
    assert result.score == 0.39999999999999997 and result.passed
