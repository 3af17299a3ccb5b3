"""Text as coder_eval 0.12.16's criteria see it, and three cli_called / json_check edges where we differed.

coder_eval reads a file a criterion checks with ``Path.read_text`` and a ``run_command``'s output with
``subprocess.run(text=True)``: both text mode, so ``\\r\\n`` and a lone ``\\r`` are ``\\n`` by then (a pattern's ``$``
before a CRLF, an include spanning two lines, an exact stdout). Its ``pre_run`` / ``post_run`` results decode the
bytes as they are, and an agent's own tools are the agent's: those keep their ``\\r``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.check_context import CheckContext
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox

from ..support.helpers import check_criterion, criterion, evaluate_task, run_cli, task_with, write_task
from ..support.text_files import read_text_capped

CRLF_CONFIG = b'API_KEY = "abc"\r\nDEBUG = True\r\n'
CR_ONLY = b"line1\rline2\r"


@pytest.fixture
def sandbox(tmp_path: Path) -> TempdirSandbox:
    box = TempdirSandbox(tmp_path / "sandbox", SandboxConfig(python=None))
    box.root.mkdir()
    (box.root / "config.py").write_bytes(CRLF_CONFIG)
    (box.root / "cr.txt").write_bytes(CR_ONLY)
    return box


def ctx(sandbox: TempdirSandbox) -> CheckContext:
    return CheckContext(sandbox, sandbox.root.parent, None, None, run=RunContext.create())


# ----------------------------------------------------------------------------- universal newlines


def test_universal_newlines_is_text_modes_translation(tmp_path: Path) -> None:
    from coder_eval_dagster.core.files import universal_newlines

    for raw in (b"a\r\nb\rc\nd\r", b"\r\r\n\n\r", b"no newline", b"", "é\r\nü".encode()):
        path = tmp_path / "f.bin"
        path.write_bytes(raw)
        with open(path, encoding="utf-8") as handle:  # what coder_eval's read_text sees
            expected = handle.read()
        assert universal_newlines(raw.decode()) == expected
        assert read_text_capped(path) == (expected, False)


def test_a_cut_file_is_translated_and_still_said_to_be_cut(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"ab\r\ncd\r\nef")
    assert read_text_capped(path, cap=6) == ("ab\ncd", True)  # the cap counts bytes as before
    assert read_text_capped(path, cap=3) == ("ab\n", True)  # a CR cut from its LF is a newline too


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "file_matches_regex", "path": "config.py", "pattern": "^API_KEY = ['\"]\\w+['\"]$", "flags": 8},
        {"type": "file_contains", "path": "config.py", "includes": ['"abc"\nDEBUG']},
        {"type": "file_check", "path": "config.py", "patterns": [{"pattern": "True$", "flags": 8}]},
        {"type": "file_matches_regex", "path": "cr.txt", "pattern": "^line2$", "flags": 8},
        {"type": "file_contains", "path": "cr.txt", "includes": ["line1\nline2\n"], "excludes": ["\r"]},
        {"type": "json_check", "path": "data.json", "assertions": [{"expression": "a", "expected": "x"}]},
    ],
    ids=lambda spec: f"{spec['type']}-{spec['path']}",
)
def test_file_criteria_read_crlf_and_cr_as_coder_eval_does(sandbox: TempdirSandbox, spec: dict[str, Any]) -> None:
    (sandbox.root / "data.json").write_bytes(b'{\r\n  "a": "x"\r\n}\r\n')
    result = check_criterion(spec, ctx(sandbox))
    assert result.score == 1.0, (result.error, result.details)


def test_cli_called_reads_a_crlf_log(sandbox: TempdirSandbox) -> None:
    record = json.dumps({"argv": ["ixp", "models", "set", "--model", "m"]}).encode()
    (sandbox.root / "calls.jsonl").write_bytes(record + b"\r\n" + record + b"\r\n")
    spec = {"type": "cli_called", "log": "calls.jsonl", "verb": "ixp models set", "flags": {"model": "m"}}
    result = check_criterion({**spec, "min_count": 2, "max_count": 2}, ctx(sandbox))
    assert result.score == 1.0, (result.error, result.details)


def test_cli_called_reads_a_log_whose_strings_hold_raw_line_separators(sandbox: TempdirSandbox) -> None:
    """JSON Lines written with ``ensure_ascii=False`` (or node's JSON.stringify) keep U+2028 and U+0085 raw."""
    records = [json.dumps({"argv": ["ixp", "note", f"a{mark}b"]}, ensure_ascii=False) for mark in ("\u2028", "\x85")]
    (sandbox.root / "calls.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    spec = {"type": "cli_called", "log": "calls.jsonl", "verb": "ixp note", "min_count": 2, "max_count": 2}
    result = check_criterion(spec, ctx(sandbox))
    assert result.score == 1.0, (result.error, result.details)


def test_weights_as_large_as_a_float_holds_still_average(sandbox: TempdirSandbox) -> None:
    from coder_eval_dagster.core.scoring import weighted_score

    (sandbox.root / "a.txt").write_text("x")
    specs = [{"type": "file_exists", "path": name, "weight": 1e308} for name in ("a.txt", "a.txt", "b.txt")]
    results = [check_criterion(spec, ctx(sandbox)) for spec in specs]
    assert weighted_score(results) == pytest.approx(2 / 3)


def test_run_command_output_is_read_in_text_mode(sandbox: TempdirSandbox) -> None:
    """``printf 'a\\r\\nb\\r\\n'`` matches ``expected_stdout: "a\\nb"`` exactly, as with coder_eval's text=True.

    Needs run_command.py's check to read ``as_text_mode(ctx.sandbox.run(...))`` (the report says so)."""
    spec = {
        "type": "run_command",
        "command": "printf 'a\\r\\nb\\r\\n'; printf 'e\\r\\n' >&2",
        "expected_stdout": "a\nb",
    }
    result = check_criterion(spec, ctx(sandbox))
    assert result.score == 1.0, result.details
    assert (result.details["stdout"], result.details["stderr"]) == ("a\nb\n", "e\n")


def test_as_text_mode_translates_only_the_output() -> None:
    from coder_eval_dagster.core.models.results import CommandRun
    from coder_eval_dagster.core.sandbox.process import as_text_mode

    run = CommandRun(command="printf 'a\\r\\n'", exit_code=0, stdout="a\r\nb\r", stderr="e\r\n")
    assert as_text_mode(run) == run.model_copy(update={"stdout": "a\nb\n", "stderr": "e\n"})
    plain = CommandRun(command="true", exit_code=0, stdout="a\n")
    assert as_text_mode(plain) is plain


def test_pre_run_and_the_sandboxs_commands_keep_their_bytes(tmp_path: Path, sandbox: TempdirSandbox) -> None:
    """coder_eval decodes pre_run / post_run output as it is (``raw.decode()``): only the criteria read text mode."""
    data = task_with(
        initial_prompt=None,
        agent={"type": "none"},
        sandbox={"python": None},
        pre_run=[{"command": "printf 'pre\\r\\n'"}],
        post_run=[{"command": "printf 'post\\r\\n'"}],
        success_criteria=[criterion("run_command", command="true")],
    )
    result = evaluate_task(tmp_path / "task", data)
    assert [run.stdout for run in result.pre_run_results] == ["pre\r\n"]
    assert [run.stdout for run in result.post_run_results] == ["post\r\n"]
    assert sandbox.run("printf 'x\\r\\n'", 30).stdout == "x\r\n"  # what an agent's own command gets


# ----------------------------------------------------------------------------- cli_called: load and argv


@pytest.mark.parametrize("counts", [{"min_count": 0}, {"min_count": 0, "max_count": None}])
def test_cli_called_that_can_never_fail_is_refused_at_load(tmp_path: Path, counts: dict[str, Any]) -> None:
    guard = criterion("cli_called", log="calls.jsonl", verb="ixp fields delete", **counts)
    path = write_task(tmp_path, task_with(success_criteria=[guard]))
    refused = run_cli("validate", path)
    assert refused.code == 1, refused.err
    assert (
        f"{path}:9: success_criteria.0.min_count: cli_called with min_count: 0 and no max_count can never fail. "
        "Set max_count: 0 for a negative guard, or raise min_count for a positive assertion."
    ) in refused.err, refused.err
    guarded = write_task(tmp_path, task_with(success_criteria=[{**guard, "max_count": 0}]), "guard.yaml")
    assert run_cli("validate", guarded).code == 0


@pytest.mark.parametrize(
    ("flags", "argv", "score"),
    [
        ({"model": ""}, ["ixp", "models", "set", "--model"], 1.0),  # coder_eval records the missing value as ""
        ({"model": {"contains": ""}}, ["ixp", "models", "set", "--model"], 1.0),
        ({"model": {"any_of": ["", "m"]}}, ["ixp", "models", "set", "--model"], 1.0),
        ({"model": {"equals": "m"}}, ["ixp", "models", "set", "--model"], 0.0),
        ({"model": ""}, ["ixp", "models", "set", "--model", "m"], 0.0),
        ({"model": "m"}, ["ixp", "models", "set", "--model", "m"], 1.0),
        ({"model": {"present": True}}, ["ixp", "models", "set", "--model"], 1.0),
        ({"model": ""}, ["ixp", "models", "set", "--model="], 1.0),
    ],
)
def test_a_value_flag_ending_the_argv_has_the_empty_value(
    sandbox: TempdirSandbox, flags: dict[str, Any], argv: list[str], score: float
) -> None:
    (sandbox.root / "calls.jsonl").write_text(json.dumps({"argv": argv}) + "\n")
    spec = {"type": "cli_called", "log": "calls.jsonl", "verb": "ixp models set", "flags": flags}
    result = check_criterion(spec, ctx(sandbox))
    assert result.score == score, result.details


def test_the_shims_match_a_bare_value_flag_as_the_criterion_does() -> None:
    """The sandbox's record_cli shims carry argv_match.py itself: one meaning for a rule and the criterion."""
    from coder_eval_dagster.core.argv_match import matches, parse_argv

    assert parse_argv(["set", "--yes", "--model"], {"model"}) == (["set"], {"yes": [""], "model": [""]})
    spec = {
        "verbs": [["set"]],
        "positional": [],
        "exact_positional": False,
        "flags": [{"names": ["model"], "predicate": "equals", "value": "", "regex_flags": 0}],
        "takes_value": ["model"],
        "ignore_flags": [],
    }
    assert matches(spec, ["set", "--model"])


# ----------------------------------------------------------------------------- json_check details


def test_a_cut_details_value_says_it_was_cut(sandbox: TempdirSandbox) -> None:
    """Needs CriterionResult.details_text (core/models/results.py) to add "…" where it cuts (the report says so)."""
    items = [f"item-{i:03d}" for i in range(100)]
    (sandbox.root / "data.json").write_text(json.dumps({"items": items}))
    spec = {"type": "json_check", "path": "data.json", "assertions": [{"expression": "items", "expected": [1]}]}
    result = check_criterion(spec, ctx(sandbox))
    text = result.details_text
    assert text.startswith('valid_json: true; assertions: [{"expression": "items"'), text
    assert text.endswith("…"), text
    short = check_criterion({**spec, "assertions": [{"expression": "length(items)", "expected": 100}]}, ctx(sandbox))
    assert "…" not in short.details_text  # nothing cut, no marker
