"""Each criterion's rules from the guide, checked against a real tempdir sandbox."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from coder_eval_dagster.core.check_context import CheckContext
from coder_eval_dagster.core.criteria import criterion_union
from coder_eval_dagster.core.criteria.file_exists import FileExists
from coder_eval_dagster.core.models.results import ToolCallRecord, TurnRecord
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox
from coder_eval_dagster.core.scoring import all_passed, criterion_result, run_check, score_criteria, weighted_score

from ..support.helpers import check_criterion

PARSE = TypeAdapter(criterion_union())


@pytest.fixture
def sandbox(tmp_path: Path) -> TempdirSandbox:
    box = TempdirSandbox(tmp_path / "sandbox", SandboxConfig(python=None))
    box.root.mkdir()
    return box


def put(sandbox: TempdirSandbox, path: str, content: str) -> None:
    target = sandbox.root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content)


def ctx(
    sandbox: TempdirSandbox, calls: list[dict[str, Any]] | None = None, reference: str | None = None
) -> CheckContext:
    trajectory = None if calls is None else []
    if calls:
        records = [ToolCallRecord(turn=1, seq=i, **c) for i, c in enumerate(calls)]
        trajectory = [TurnRecord(index=1, calls=records)]
    return CheckContext(sandbox, sandbox.root.parent, trajectory, reference, run=RunContext.create())


# --------------------------------------------------------------------------- file criteria


def test_file_exists(sandbox):
    put(sandbox, "a/b.txt", "x")
    assert check_criterion({"type": "file_exists", "path": "a/b.txt"}, ctx(sandbox)).score == 1.0
    missing = check_criterion({"type": "file_exists", "path": "nope"}, ctx(sandbox))
    assert (missing.score, missing.passed) == (0.0, False)


def test_path_leaving_the_sandbox_is_refused(sandbox):
    """At load; and by grading too (a criterion built unvalidated; a link, which only grading sees)."""
    (sandbox.root.parent / "secret.txt").write_text("s")
    with pytest.raises(ValidationError, match="stays inside it"):
        check_criterion({"type": "file_exists", "path": "../secret.txt"}, ctx(sandbox))
    unvalidated = FileExists.model_construct(type="file_exists", description="d", path="../secret.txt")
    result = criterion_result(0, unvalidated, run_check(unvalidated, ctx(sandbox)), None)
    assert result.score == 0.0 and "leaves the sandbox" in str(result.error)
    link = sandbox.root / "link"
    link.symlink_to(sandbox.root.parent / "secret.txt")
    assert (
        "leaves the sandbox"
        in check_criterion({"type": "file_contains", "path": "link", "includes": ["s"]}, ctx(sandbox)).error
    )


def test_file_contains_fractional(sandbox):
    put(sandbox, "app.py", "Hello\nimport datetime\nTODO\n")
    spec = {
        "type": "file_contains",
        "path": "app.py",
        "includes": ["Hello", "import datetime", "absent"],
        "excludes": ["TODO", "FIXME"],
    }
    result = check_criterion(spec, ctx(sandbox))
    assert result.score == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert not result.passed and result.details["missing_includes"] == ["absent"]
    only_includes = check_criterion(
        {"type": "file_contains", "path": "app.py", "includes": ["Hello", "zzz"]}, ctx(sandbox)
    )
    assert only_includes.score == 0.5  # absent categories do not inflate the score


def test_file_contains_missing_file(sandbox):
    result = check_criterion({"type": "file_contains", "path": "x.py", "includes": ["a"]}, ctx(sandbox))
    assert result.score == 0.0 and "not found" in result.error


def test_file_check_active_categories(sandbox):
    put(sandbox, "main.py", "from uipath import UiPath\ndef main():\n    pass\n")
    spec = {
        "type": "file_check",
        "path": "main.py",
        "includes": ["def main", "missing"],
        "excludes": ["import os"],
        "patterns": [
            {"pattern": r"def main\(.*\):"},
            {"pattern": "print", "must_match": True},
            {"pattern": "eval\\(", "must_match": False},
        ],
    }
    result = check_criterion(spec, ctx(sandbox))
    assert result.score == pytest.approx((0.5 + 1.0 + 2 / 3) / 3)
    assert check_criterion({"type": "file_check", "path": "main.py"}, ctx(sandbox)).score == 1.0
    assert check_criterion({"type": "file_check", "path": "nope.py", "includes": ["x"]}, ctx(sandbox)).score == 0.0


def test_file_check_regex_flags(sandbox):
    put(sandbox, "a.txt", "first\nSECOND line\n")
    multiline = {"type": "file_check", "path": "a.txt", "patterns": [{"pattern": "^second", "flags": 2 | 8}]}
    assert check_criterion(multiline, ctx(sandbox)).score == 1.0
    assert check_criterion({**multiline, "patterns": [{"pattern": "^second"}]}, ctx(sandbox)).score == 0.0


def test_file_matches_regex(sandbox):
    put(sandbox, "config.py", "API_KEY = 'abc123'\n")
    spec = {"type": "file_matches_regex", "path": "config.py", "pattern": r"^API_KEY = ['\"]\w+['\"]$", "flags": 8}
    assert check_criterion(spec, ctx(sandbox)).score == 1.0
    assert check_criterion({**spec, "must_match": False}, ctx(sandbox)).score == 0.0
    assert check_criterion({**spec, "pattern": "SECRET"}, ctx(sandbox)).score == 0.0
    assert check_criterion({**spec, "pattern": "SECRET", "must_match": False}, ctx(sandbox)).score == 1.0


# --------------------------------------------------------------------------- json_check


@pytest.mark.parametrize(
    ("assertion", "ok"),
    [
        ({"expression": "status", "expected": "success"}, True),
        ({"expression": "status", "operator": "not_equals", "expected": "failed"}, True),
        ({"expression": "tags", "operator": "contains", "expected": "b"}, True),
        ({"expression": "name", "operator": "contains", "expected": "vo"}, True),
        ({"expression": "length(results)", "operator": "gt", "expected": 2}, True),
        ({"expression": "length(results)", "operator": "gte", "expected": 4}, False),
        ({"expression": "score", "operator": "lt", "expected": 1}, True),
        ({"expression": "score", "operator": "lte", "expected": 0.5}, True),
        ({"expression": "results", "operator": "type", "expected": "array"}, True),
        ({"expression": "flag", "operator": "type", "expected": "boolean"}, True),
        ({"expression": "count", "operator": "type", "expected": "integer"}, True),
        ({"expression": "flag", "operator": "type", "expected": "integer"}, False),
        ({"expression": "metadata.version", "operator": "regex", "expected": r"^\d+\.\d+\.\d+$"}, True),
        ({"expression": "items[?active].name", "operator": "exists"}, True),
        ({"expression": "nothing.here", "operator": "exists"}, False),
        ({"expression": "missing", "operator": "gt", "expected": 1}, False),
        ({"expression": "name", "operator": "gt", "expected": 1}, False),  # type error fails, never crashes
    ],
)
def test_json_check_operators(sandbox, assertion, ok):
    put(
        sandbox,
        "r.json",
        json.dumps(
            {
                "status": "success",
                "tags": ["a", "b"],
                "name": "novo",
                "results": [1, 2, 3],
                "score": 0.5,
                "flag": True,
                "count": 3,
                "metadata": {"version": "1.2.3"},
                "items": [{"name": "x", "active": True}],
            }
        ),
    )
    result = check_criterion({"type": "json_check", "path": "r.json", "assertions": [assertion]}, ctx(sandbox))
    assert result.score == (1.0 if ok else 0.0)


def test_json_check_schema_and_assertions_average(sandbox):
    put(
        sandbox,
        "schema.json",
        json.dumps({"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}}),
    )
    put(sandbox, "r.json", json.dumps({"status": 3}))
    spec = {
        "type": "json_check",
        "path": "r.json",
        "json_schema": "schema.json",
        "assertions": [{"expression": "status", "expected": 3}, {"expression": "status", "expected": 4}],
    }
    result = check_criterion(spec, ctx(sandbox))
    assert result.score == pytest.approx((0.0 + 0.5) / 2) and result.details["schema_errors"]


def test_json_check_invalid_or_missing(sandbox):
    put(sandbox, "bad.json", "{nope")
    assert check_criterion({"type": "json_check", "path": "bad.json"}, ctx(sandbox)).score == 0.0
    assert check_criterion({"type": "json_check", "path": "none.json"}, ctx(sandbox)).score == 0.0
    put(sandbox, "ok.json", "[]")
    assert check_criterion({"type": "json_check", "path": "ok.json"}, ctx(sandbox)).score == 1.0


# --------------------------------------------------------------------------- run_command


def test_run_command_exit_code_and_stdout(sandbox):
    put(sandbox, "hello.py", "print('Hello, World!')\n")
    base = {"type": "run_command", "command": "python3 hello.py"}
    assert check_criterion(base, ctx(sandbox)).score == 1.0
    assert (
        check_criterion({**base, "expected_stdout": "  Hello, World!\n"}, ctx(sandbox)).score == 1.0
    )  # exact is stripped
    assert check_criterion({**base, "expected_stdout": "Hello"}, ctx(sandbox)).score == 0.0
    assert check_criterion({**base, "expected_stdout": "World", "stdout_match": "contains"}, ctx(sandbox)).score == 1.0
    assert (
        check_criterion({**base, "expected_stdout": r"^Hello, \w+!$", "stdout_match": "regex"}, ctx(sandbox)).score
        == 1.0
    )
    assert (
        check_criterion({"type": "run_command", "command": "exit 3", "expected_exit_code": 3}, ctx(sandbox)).score
        == 1.0
    )
    assert check_criterion({"type": "run_command", "command": "exit 3"}, ctx(sandbox)).score == 0.0


def test_run_command_score_from_stdout(sandbox):
    spec = {"type": "run_command", "command": "printf '0.75\\nline two\\n'", "score_from_stdout": True}
    result = check_criterion(spec, ctx(sandbox))
    assert result.score == 0.75 and result.details["details"] == ["line two"] and not result.passed
    assert check_criterion({**spec, "command": "echo 0.9; exit 1"}, ctx(sandbox)).score == 0.0
    assert check_criterion({**spec, "command": "echo lots"}, ctx(sandbox)).error
    # out of [0, 1]: clamped as coder_eval clamps it (float noise of a weighted sum, a checker's overshoot), said
    noisy = check_criterion({**spec, "command": "python3 -c 'print(0.05+0.55+0.3+0.1)'"}, ctx(sandbox))
    assert noisy.score == 1.0 and noisy.passed and noisy.details["clamped_from"] == 1.0000000000000002
    assert check_criterion({**spec, "command": "echo -0.2"}, ctx(sandbox)).score == 0.0
    for unreadable in ("nan", "inf", ""):
        result = check_criterion({**spec, "command": f"echo {unreadable}"}, ctx(sandbox))
        assert result.score == 0.0 and "not a number" in result.error


def test_a_run_commands_stdout_past_the_cap_is_said_to_be_matched_in_part(sandbox):
    middle = "python3 -c \"print('x' * 60000); print('NEEDLE'); print('x' * 60000)\""
    spec = {"type": "run_command", "command": middle, "expected_stdout": "NEEDLE", "stdout_match": "contains"}
    result = check_criterion(spec, ctx(sandbox))
    assert result.score == 0.0 and "first and last half were matched" in result.details["stdout_capped"]
    short = check_criterion({**spec, "command": "echo NEEDLE"}, ctx(sandbox))
    assert short.score == 1.0 and "stdout_capped" not in short.details


def test_a_glob_follows_links_as_the_sandbox_sees_them_and_walks_any_depth(sandbox):
    """``ln -s "$PWD/sub" link`` points at /sandbox/sub, nowhere on this machine: a glob through it matched
    nothing while the literal path was found; a deep tree's ``**`` was a RecursionError."""
    put(sandbox, "sub/a.txt", "MARK\n")
    (sandbox.root / "link").symlink_to("/sandbox/sub")
    (sandbox.root / "alink.txt").symlink_to("/sandbox/sub/a.txt")
    (sandbox.root / "out").symlink_to(sandbox.root.parent)
    (sandbox.root / "l1").symlink_to("l2")
    (sandbox.root / "l2").symlink_to("l1")
    context = ctx(sandbox)
    assert context.matching_files("link/*.txt") == ["link/a.txt"]
    assert context.matching_files("alink*") == ["alink.txt"]
    assert context.matching_files("**/a.txt") == ["sub/a.txt"]  # ** does not descend into linked folders
    assert context.matching_files("l*") == []  # a loop names no file
    with pytest.raises(PermissionError, match="leaves the sandbox"):
        context.matching_files("out/*")
    contains = {"type": "file_contains", "path": "link/*.txt", "includes": ["MARK"]}
    assert check_criterion(contains, context).score == 1.0
    looped = check_criterion({"type": "file_exists", "path": "l1"}, context)
    assert looped.score == 0.0 and "loop of links" in (looped.error or "")
    levels = [sandbox.root.joinpath(*["d"] * level) for level in range(1, 1101)]
    for folder in levels:  # one at a time: pathlib's mkdir(parents=True) and rmtree recurse as deep
        folder.mkdir()
    try:
        (levels[-1] / "deep.txt").write_text("x")
        assert context.matching_files("**/deep.txt") == ["/".join(["d"] * 1100 + ["deep.txt"])]
    finally:
        (levels[-1] / "deep.txt").unlink(missing_ok=True)
        for folder in reversed(levels):
            folder.rmdir()


def test_a_glob_over_a_tree_past_path_max_finds_what_it_can_reach(sandbox):
    """2,500 nested folders (a 7.5 KB path): ``**/x.txt`` failed the criterion with ENAMETOOLONG, its 7.5 KB host
    path in the error; a file past PATH_MAX is not found there, the reachable one is."""
    import subprocess

    put(sandbox, "x.txt", "near\n")
    fd = os.open(sandbox.root, os.O_RDONLY)
    try:
        for _ in range(2500):  # through folder descriptors: no path that long can be named
            os.mkdir("dd", dir_fd=fd)
            fd, parent = os.open("dd", os.O_RDONLY, dir_fd=fd), fd
            os.close(parent)
        os.close(os.open("x.txt", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
        found = check_criterion({"type": "file_exists", "path": "**/x.txt"}, ctx(sandbox))
        assert (found.score, found.error) == (1.0, None)
    finally:
        os.close(fd)
        subprocess.run(["rm", "-rf", str(sandbox.root / "dd")], check=True, timeout=120)


def test_a_utf16_file_is_read_as_its_text_so_a_forbidden_word_is_seen(sandbox):
    (sandbox.root / "config.txt").write_bytes("api_key = SECRET\n".encode("utf-16"))  # with its byte-order mark
    excludes = {"type": "file_contains", "path": "config.txt", "includes": ["api"], "excludes": ["SECRET"]}
    seen = check_criterion(excludes, ctx(sandbox))
    assert seen.details["present_excludes"] == ["SECRET"] and seen.details["missing_includes"] == []
    negative = {"type": "file_matches_regex", "path": "config.txt", "pattern": "SECRET", "must_match": False}
    assert check_criterion(negative, ctx(sandbox)).score == 0.0


def test_run_command_timeout_kills_the_process_group(sandbox):
    spec = {"type": "run_command", "command": "sleep 30 & sleep 30", "timeout": 0.5}
    result = check_criterion(spec, ctx(sandbox))
    assert result.score == 0.0 and "timed out" in result.error


def test_sandbox_limits_timeout_caps_commands(tmp_path):
    box = TempdirSandbox(tmp_path / "s", SandboxConfig(python=None, limits={"timeout": 0.3}))
    box.root.mkdir()
    run = box.run("sleep 5", timeout=30)
    assert run.timed_out and run.duration_s < 3


# --------------------------------------------------------------------------- reference_comparison

REFERENCE = "def fib(n):\n    if n <= 1:\n        return n\n    return fib(n - 1) + fib(n - 2)\n"


def test_reference_comparison_methods(sandbox):
    put(sandbox, "same.py", REFERENCE)
    put(sandbox, "other.py", "import os\nprint(os.getcwd())\n")
    for method in ("ast", "token", "complexity"):
        same = check_criterion(
            {"type": "reference_comparison", "agent_file": "same.py", "comparison_method": method},
            ctx(sandbox, reference=REFERENCE),
        )
        assert same.score == 1.0 and same.passed
    far = check_criterion({"type": "reference_comparison", "agent_file": "other.py"}, ctx(sandbox, reference=REFERENCE))
    assert far.score < 0.8 and not far.passed and far.pass_threshold == 0.8  # similarity_threshold decides


def test_reference_comparison_records_its_similarity_threshold_on_every_path(sandbox):
    put(sandbox, "solution.py", REFERENCE)
    spec = {"type": "reference_comparison", "similarity_threshold": 0.5, "pass_threshold": 0.95}
    found = check_criterion({**spec, "agent_file": "solution.py"}, ctx(sandbox, reference=REFERENCE))
    missing = check_criterion({**spec, "agent_file": "missing.py"}, ctx(sandbox, reference=REFERENCE))
    assert found.passed and found.pass_threshold == 0.5  # coder_eval's rule: the explicit pass_threshold yields
    assert missing.error and not missing.passed and missing.pass_threshold == 0.5


def test_reference_never_lands_in_details(sandbox):
    put(sandbox, "echo.py", REFERENCE)
    result = check_criterion(
        {"type": "run_command", "command": "cat echo.py", "expected_stdout": "x"}, ctx(sandbox, reference=REFERENCE)
    )
    assert "fib(n - 1)" not in json.dumps(result.details)


# --------------------------------------------------------------------------- cli_called


def log(sandbox, *argvs, tool="uip"):
    put(sandbox, "calls.jsonl", "".join(json.dumps({"tool": tool, "argv": a, "exit": 0}) + "\n" for a in argvs))


def cli(sandbox, **spec):
    return check_criterion({"type": "cli_called", "log": "calls.jsonl", **spec}, ctx(sandbox))


def test_cli_verb_positional_and_equals_predicate(sandbox):
    log(
        sandbox,
        ["ixp", "projects", "configure-model", "my_invoices-ixp", "--model", "gemini_2_5_pro", "--output", "json"],
    )
    spec = {
        "verb": "ixp projects configure-model",
        "positional": ["my_invoices-ixp"],
        "flags": {"model": "gemini_2_5_pro"},
    }
    assert cli(sandbox, **spec).passed
    assert not cli(sandbox, **{**spec, "flags": {"model": "other"}}).passed
    assert not cli(sandbox, verb="ixp projects configure").passed  # an ordered prefix of whole tokens
    assert not cli(sandbox, **spec, tool="git").passed


def test_cli_verb_prefix_is_ordered(sandbox):
    log(sandbox, ["ixp", "labellings", "unconfirm"])
    assert not cli(sandbox, verb="ixp labellings confirm").passed


def test_cli_switch_does_not_eat_the_positional(sandbox):
    log(sandbox, ["ixp", "fields", "delete", "--yes", "proj-1"])
    guard = cli(sandbox, verb="ixp fields delete", positional=["proj-1"], min_count=0, max_count=0)
    assert not guard.passed  # correctly FAILS: the delete happened


def test_cli_declared_value_flag(sandbox):
    log(sandbox, ["ixp", "projects", "list", "--folder", "Finance", "proj-1"])
    assert not cli(sandbox, verb="ixp projects list", positional=["proj-1"]).passed
    assert cli(sandbox, verb="ixp projects list", positional=["proj-1"], value_flags=["folder"]).passed


def test_cli_equals_form_and_dash_leading_values(sandbox):
    log(sandbox, ["seek", "--offset=-1", "--limit", "-1"])
    assert cli(sandbox, verb="seek", flags={"offset": "-1", "limit": {"equals": "-1"}}).passed


def test_cli_predicates(sandbox):
    log(sandbox, ["fields", "get", "--fields", "a", "--fields", "bee", "--force", "--name", "Invoice\nNumber"])
    assert cli(sandbox, flags={"fields": {"contains": "ee"}}).passed  # repeated flags: any value
    assert cli(sandbox, flags={"fields": {"any_of": ["x", "a"]}}).passed
    assert cli(sandbox, flags={"force": {"present": True}}).passed
    assert not cli(sandbox, flags={"force": {"absent": True}}).passed
    assert cli(sandbox, flags={"dry-run": {"absent": True}}).passed
    assert not cli(sandbox, flags={"name": {"matches_regex": "Invoice.Number"}}).passed
    assert cli(sandbox, flags={"name": {"matches_regex": "invoice.number", "flags": 2 | 16}}).passed


def test_cli_aliases_gather_both_spellings(sandbox):
    log(sandbox, ["delete", "-y", "proj"], ["get", "-f", "f-002"])
    assert cli(sandbox, verb="delete", flags={"yes": {"present": True, "aliases": ["y"]}}).passed
    assert cli(sandbox, verb="get", flags={"fields": {"equals": "f-002", "aliases": ["f"]}}).passed
    assert not cli(sandbox, verb="delete", flags={"yes": {"absent": True, "aliases": ["y"]}}).passed


def test_cli_ignored_flags_and_output_value(sandbox):
    log(sandbox, ["projects", "list", "--output", "json", "proj-1"])
    assert cli(sandbox, verb="projects list", positional=["proj-1"]).passed  # output takes its value by default
    log(sandbox, ["delete", "--verbose", "proj-1"])
    assert cli(sandbox, verb="delete", positional=["proj-1"], ignore_flags=["verbose"]).passed


def test_cli_bundled_short_flags_are_not_split(sandbox):
    log(sandbox, ["rm", "-rf", "dir"])
    assert cli(sandbox, verb="rm", flags={"f": {"absent": True}}).passed  # the documented limitation
    assert cli(sandbox, verb="rm", flags={"f": {"present": True, "aliases": ["rf"]}}).passed


def test_cli_counts(sandbox):
    log(sandbox, ["a"], ["a"], ["b"])
    assert cli(sandbox, verb="a", min_count=2, max_count=2).passed
    assert not cli(sandbox, verb="a", min_count=3).passed
    assert not cli(sandbox, verb="a", max_count=1).passed


def test_cli_missing_or_unusable_log_fails(sandbox):
    assert not cli(sandbox, verb="x", min_count=0, max_count=0).passed  # no vacuous pass on a missing log
    for bad in ("not json", "[1, 2]", '{"argv": "a b"}', '{"argv": [1]}'):
        put(sandbox, "calls.jsonl", '{"argv": ["ok"]}\n' + bad + "\n")
        result = cli(sandbox, verb="x", min_count=0, max_count=0)
        assert result.score == 0.0 and "calls.jsonl:2" in result.error


# --------------------------------------------------------------------------- trajectory criteria


def bash(command, status="success"):
    return {"tool": "Bash", "parameters": {"command": command}, "status": status}


@pytest.mark.parametrize(
    "command",
    [
        "curl curated_channels",
        "bash -lc 'curl \"curated_channels\"'",
        "sh -c \"curl 'curated_channels'\"",
        'bash -lc "curl \\"curated_channels\\""',
        "zsh -lc \"curl curated_'channels'\"",
    ],
)
def test_command_executed_shell_normalization(sandbox, command):
    spec = {"type": "command_executed", "tool_name": "Bash", "command_pattern": "curl curated_channels"}
    assert check_criterion(spec, ctx(sandbox, [bash(command)])).score == 1.0


def test_command_executed_counts_and_guards(sandbox):
    calls = [
        bash("pytest -q"),
        bash("pytest -q", "error"),
        bash("pytest --dry-run"),
        {"tool": "Read", "parameters": {"path": "a"}},
    ]
    spec = {"type": "command_executed", "command_pattern": "pytest"}
    assert check_criterion({**spec, "min_count": 3}, ctx(sandbox, calls)).score == 1.0
    assert check_criterion({**spec, "min_count": 4}, ctx(sandbox, calls)).score == 0.75
    assert check_criterion(
        {**spec, "min_count": 3, "require_success": True}, ctx(sandbox, calls)
    ).score == pytest.approx(2 / 3)
    assert check_criterion(
        {**spec, "exclude_pattern": "--dry", "min_count": 3}, ctx(sandbox, calls)
    ).score == pytest.approx(2 / 3)
    assert check_criterion({**spec, "min_count": 0, "max_count": 0}, ctx(sandbox, calls)).score == 0.0
    assert check_criterion(
        {**spec, "command_pattern": "rm -rf", "min_count": 0, "max_count": 0}, ctx(sandbox, calls)
    ).passed
    assert check_criterion({"type": "command_executed", "tool_name": "Read"}, ctx(sandbox, calls)).score == 1.0
    # an exclusion sees the normalized form too
    hidden = [bash("bash -lc \"pytest '--dry'-run\"")]
    assert check_criterion({**spec, "exclude_pattern": "--dry-run"}, ctx(sandbox, hidden)).score == 0.0


def test_commands_efficiency(sandbox):
    spec = {"type": "commands_efficiency", "expected_commands": 4}
    assert check_criterion(spec, ctx(sandbox, [bash("a")] * 3)).score == 1.0
    assert check_criterion(spec, ctx(sandbox, [bash("a")] * 8)).score == 0.5


def test_skill_triggered(sandbox):
    skill_call = {"tool": "Skill", "parameters": {"skill": "uipath-coded-agents:uipath-agents"}, "status": "success"}
    read_call = {
        "tool": "Read",
        "parameters": {"path": "/repo/.agents/skills/uipath-agents/SKILL.md"},
        "status": "success",
    }
    positive = {"type": "skill_triggered", "skill_name": "uipath-agents", "expected_skill": "uipath-agents"}
    negative = {**positive, "expected_skill": ""}
    for calls in ([skill_call], [read_call]):
        hit = check_criterion(positive, ctx(sandbox, calls))
        assert (hit.score, hit.observed_label, hit.expected_label) == (1.0, "yes", "yes")
        assert check_criterion(negative, ctx(sandbox, calls)).score == 0.0
        # a Skill call that failed (an unknown skill) brought nothing; a read that failed (a skill folder that is
        # not there) is the agent reaching for the skill, as the guide and coder_eval count it
        for status in ("error", "unknown"):
            failed = [{**call, "status": status} for call in calls]
            reached = "yes" if calls == [read_call] else "no"
            assert check_criterion(positive, ctx(sandbox, failed)).observed_label == reached
    miss = check_criterion(negative, ctx(sandbox, [bash("ls")]))
    assert (miss.score, miss.observed_label, miss.expected_label) == (1.0, "no", "no")
    no_telemetry = check_criterion(positive, ctx(sandbox, []))
    assert no_telemetry.score == 0.0 and "turn records" in no_telemetry.error
    # coder_eval's path pattern: either separator, repeated; a longer name is another skill
    for path, seen in (("cat skills//uipath-agents/SKILL.md", "yes"), (r"type skills\uipath-agents\x", "yes")):
        call = {"tool": "Bash", "parameters": {"command": path}, "status": "success"}
        assert check_criterion(positive, ctx(sandbox, [call])).observed_label == seen
    longer = {"tool": "Read", "parameters": {"path": "skills/uipath-agents-v2/SKILL.md"}, "status": "success"}
    assert check_criterion(positive, ctx(sandbox, [longer])).observed_label == "no"


# --------------------------------------------------------------------------- classification_match


@pytest.mark.parametrize(
    ("content", "observed", "score"),
    [
        ("Positive\n", "positive", 1.0),
        ("negative", "negative", 0.0),
        ("", "(none)", 0.0),
        (None, "(none)", 0.0),
        ("maybe", "(other)", 0.0),
    ],
)
def test_classification_match(sandbox, content, observed, score):
    if content is not None:
        put(sandbox, "result.txt", content)
    spec = {
        "type": "classification_match",
        "path": "result.txt",
        "expected_label": "POSITIVE",
        "allowed_labels": ["positive", "negative"],
    }
    result = check_criterion(spec, ctx(sandbox))
    assert (result.observed_label, result.expected_label, result.score) == (observed, "positive", score)


@pytest.mark.parametrize(
    ("content", "expected", "score"),
    [(None, "(none)", 1.0), ("  \n", "(none)", 1.0), ("maybe", "(none)", 0.0), ("maybe", "(other)", 1.0)],
)
def test_classification_match_sentinel_expected(sandbox, content, expected, score):
    """coder_eval compares the sentinels as labels: a row expecting "no label" passes on a missing or empty file."""
    if content is not None:
        put(sandbox, "result.txt", content)
    spec = {"type": "classification_match", "path": "result.txt", "expected_label": expected, "allowed_labels": ["a"]}
    assert check_criterion(spec, ctx(sandbox)).score == score


def test_classification_match_case_sensitive(sandbox):
    put(sandbox, "r.txt", "Positive")
    spec = {
        "type": "classification_match",
        "path": "r.txt",
        "expected_label": "Positive",
        "allowed_labels": ["positive", "Positive"],
        "case_sensitive": True,
    }
    assert check_criterion(spec, ctx(sandbox)).observed_label == "Positive"


# --------------------------------------------------------------------------- weighting and gating


def test_weighting_and_informational_criteria(sandbox):
    put(sandbox, "a.txt", "x")
    criteria = [
        PARSE.validate_python(c)
        for c in (
            {"type": "file_exists", "path": "a.txt", "description": "a", "weight": 3},
            {"type": "file_exists", "path": "b.txt", "description": "b", "weight": 1},
            {"type": "file_exists", "path": "c.txt", "description": "info", "weight": 0},
        )
    ]
    results = score_criteria(criteria, ctx(sandbox))
    assert weighted_score(results) == 0.75 and not all_passed(results)
    assert results[2].gating is False and results[2].score == 0.0  # stored, not scored
    assert all_passed(results[:1] + results[2:])  # an informational failure never fails the task


def test_pass_threshold(sandbox):
    put(sandbox, "a.txt", "one two")
    spec = {"type": "file_contains", "path": "a.txt", "includes": ["one", "two", "three", "four"]}
    assert not check_criterion(spec, ctx(sandbox)).passed
    assert check_criterion({**spec, "pass_threshold": 0.5}, ctx(sandbox)).passed


def test_a_crashing_check_scores_zero(sandbox, monkeypatch):
    from coder_eval_dagster.core import criteria

    def boom(criterion, context):
        raise RuntimeError("bug")

    kind = criteria.REGISTRY["file_exists"]
    monkeypatch.setitem(criteria.REGISTRY, "file_exists", type(kind)(kind.model, boom))
    result = check_criterion({"type": "file_exists", "path": "a"}, ctx(sandbox))
    assert result.score == 0.0 and result.error == "RuntimeError: bug" and not result.passed


def test_reference_comparison_names_which_side_does_not_parse(sandbox):
    put(sandbox, "solution.py", REFERENCE)
    put(sandbox, "broken.py", "def f(:\n")
    spec = {"type": "reference_comparison", "comparison_method": "ast"}
    bad_reference = check_criterion({**spec, "agent_file": "solution.py"}, ctx(sandbox, reference="print((1)\n"))
    bad_agent = check_criterion({**spec, "agent_file": "broken.py"}, ctx(sandbox, reference=REFERENCE))
    assert bad_reference.error.startswith("cannot parse the reference as Python: ")
    assert bad_agent.error.startswith("cannot parse broken.py as Python: ")


def test_a_path_starting_with_two_slashes_is_the_hosts_and_refused(sandbox):
    for spec in (
        {"type": "file_contains", "path": "//etc/passwd", "includes": ["root"]},
        {"type": "file_exists", "path": "//etc/hostname"},
    ):
        with pytest.raises(ValidationError, match="not absolute"):
            check_criterion(spec, ctx(sandbox))


def test_reference_comparison_never_reads_a_staged_file_planted_as_a_link_out_or_a_fifo(sandbox, tmp_path):
    staged = tmp_path / "staged_reference"
    staged.mkdir()
    (tmp_path / "host_only.py").write_text("HOST_ONLY = 'secret'\n")
    put(sandbox, "solution.py", REFERENCE)
    spec = {"type": "reference_comparison", "agent_file": "solution.py", "reference_file": "fib.py"}
    context = ctx(sandbox)
    context.reference_dir = staged
    (staged / "fib.py").symlink_to(tmp_path / "host_only.py")
    linked = check_criterion(spec, context)
    assert linked.score == 0.0 and "leaves the reference folder" in linked.error and "secret" not in str(linked)
    (staged / "fib.py").unlink()
    os.mkfifo(staged / "fib.py")  # no writer: an open that waited would hang the scoring
    fifo = check_criterion(spec, context)
    assert fifo.score == 0.0 and "not a regular file: fib.py" in fifo.error


def test_a_glob_leaves_out_folders_the_ignore_rules_name_by_path_as_the_copy_does(tmp_path):
    """``/sub`` (anchored: the root's sub only) and ``docs/gen`` (a path) left nothing out of a glob's matches:
    its matcher compared folder names alone, where the template copy reads the same patterns gitignore-style."""
    config = SandboxConfig(python=None, ignore_patterns=["/sub", "docs/gen", "!node_modules"])
    box = TempdirSandbox(tmp_path / "sandbox", config)
    box.root.mkdir()
    for path in ("sub/a.txt", "deep/sub/a.txt", "docs/gen/a.txt", "gen/a.txt", "node_modules/a.txt", ".venv/a.txt"):
        put(box, path, "x")
    assert ctx(box).matching_files("**/a.txt") == ["deep/sub/a.txt", "gen/a.txt", "node_modules/a.txt"]
    assert ctx(box).matching_files("sub/*.txt") == ["sub/a.txt"]  # spelled out: looked in
