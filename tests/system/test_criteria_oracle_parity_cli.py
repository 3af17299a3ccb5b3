"""json_check and cli_called through the installed ``coder-eval``, as coder_eval 0.12.16 reads the same task files.

Checked against the released 0.12.16: the json_check task below scores 1 on both criteria there (a draft-04 schema
validated as draft-04, a ``json_schema`` glob resolved to its one file); it scored 0 on both here. The cli_called
forms below are refused there at load; here they loaded, and the guard passed on a log holding the very call.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli, replay_task_file

pytestmark = pytest.mark.slow

JSON_TASK = r"""
task_id: schemas
description: a draft-04 schema, named by a glob
agent: {type: none}
sandbox: {driver: tempdir, python: null}
pre_run:
  - command: |
      mkdir -p schemas && printf '{"n": 5}' > data.json
      printf '%s' '{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
        "properties": {"n": {"type": "number", "maximum": 10, "exclusiveMaximum": true}}}' > schemas/v1.json
success_criteria:
  - {type: json_check, path: data.json, json_schema: schemas/v1.json, description: draft-04}
  - {type: json_check, path: data.json, json_schema: "schemas/*.json", description: glob}
"""

GUARD_TASK = r"""
task_id: guard
description: a flag written into the verb
agent: {type: none}
sandbox: {driver: tempdir, python: null}
pre_run:
  - command: |
      printf '%s\n' '{"tool": "uip", "argv": ["del", "--all"], "exit": 0}' > calls.jsonl
success_criteria:
  - type: cli_called
    description: never deleted everything
    log: calls.jsonl
    verb: "del --all"
    min_count: 0
    max_count: 0
"""

READINGS_TASK = r"""
task_id: readings
description: run_command's and file_check's readings as coder_eval's
agent: {type: none}
sandbox: {python: null}
success_criteria:
  - type: run_command
    command: "printf 'Total: 42'"
    expected_stdout: |
      Total: 42
    stdout_match: contains
    description: block scalar
  - {type: run_command, command: "echo hello world foo", expected_stdout: "  world  ", stdout_match: contains,
     description: padded}
  - {type: run_command, command: "printf '0.8'; exit 1", score_from_stdout: true, expected_exit_code: 1,
     description: scored at its expected code}
  - {type: run_command, command: "printf '0.8'; exit 1", score_from_stdout: true, description: scored at 1}
  - {type: file_check, path: missing.py, description: missing}
"""

REFUSED_TASK = """
task_id: refused
description: cli_called forms coder_eval refuses
agent: {type: none}
sandbox: {python: null}
success_criteria:
  - {type: cli_called, log: calls.jsonl, verb: "", positional: [x], description: blank}
  - {type: cli_called, log: calls.jsonl, verb_any_of: [list, "rm -rf"], description: flag}
  - {type: cli_called, log: calls.jsonl, description: nothing to match}
"""


def test_a_draft_04_schema_and_a_schema_glob_score_as_in_coder_eval(tmp_path: Path, system_cli: SystemCli) -> None:
    task = write(tmp_path / "schemas.yaml", JSON_TASK)
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    results = run.result("schemas")["success_criteria_results"]
    assert [(r["description"], r["score"], r["error"]) for r in results] == [
        ("draft-04", 1.0, None),
        ("glob", 1.0, None),
    ], results
    assert "schema_resolved: schemas/v1.json" in results[1]["details"], results[1]


def test_run_command_and_file_check_read_as_in_coder_eval(tmp_path: Path, system_cli: SystemCli) -> None:
    """0.12.16 scores these 1, 1, 0.8, 0 and 0 (a missing file said as its error); here `contains` compared the
    block's last newline, and `score_from_stdout` wanted exit 0 whatever the task expected."""
    task = write(tmp_path / "readings.yaml", READINGS_TASK)
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 1, outcome.output
    results = run.result("readings")["success_criteria_results"]
    assert [(r["description"], r["score"], r["error"]) for r in results] == [
        ("block scalar", 1.0, None),
        ("padded", 1.0, None),
        ("scored at its expected code", 0.8, None),
        ("scored at 1", 0.0, "exit code 1 (expected 0)"),
        ("missing", 0.0, "file not found: missing.py"),
    ], results


def test_a_flag_in_a_guards_verb_is_refused_before_anything_runs(tmp_path: Path, system_cli: SystemCli) -> None:
    task = write(tmp_path / "guard.yaml", GUARD_TASK)
    outcome = system_cli("run", task, "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 2, outcome.output  # it ran and passed, on a log holding exactly that call
    assert (
        f"{task}:13: success_criteria.0.verb: verb token '--all' looks like a flag. A verb matches only the "
        "non-flag arguments, so a flag inside it can never match. Put it in flags: instead, "
        "e.g. flags: {all: {present: true}}"
    ) in outcome.err, outcome.output
    assert not system_cli.runs.exists()


def test_cli_called_forms_coder_eval_refuses_are_refused_naming_file_line_field(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    task = write(tmp_path / "refused.yaml", REFUSED_TASK)
    outcome = system_cli.invalid(task)
    assert (
        f"{task}:7: success_criteria.0.verb: must not be blank: a blank verb is an empty prefix and matches every "
        "invocation"
    ) in outcome.err, outcome.output
    assert f"{task}:8: success_criteria.1.verb_any_of.1: verb token '-rf' looks like a flag." in outcome.err
    assert (
        f"{task}:9: success_criteria.2: cli_called requires at least one of verb / verb_any_of / positional / "
        "flags / tool to match on"
    ) in outcome.err, outcome.output


def test_a_failed_read_under_a_skill_folder_is_engagement_as_in_coder_eval(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """coder_eval's probe `early_stop_contract_any_engagement.yaml`: an `ls skills/beta/` that fails (no such folder)
    is the agent reaching for the skill. 0.12.16 and the guide count it; here it was `observed: no`, a FAILURE."""
    turns = [{"calls": [{"tool": "Bash", "command": "ls skills/beta/"}]}, {"text": "done"}]
    checks = [{"type": "skill_triggered", "skill_name": "beta", "expected_skill": "beta", "description": "beta"}]
    task = replay_task_file(tmp_path / "tasks", "probe", turns, success_criteria=checks)
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    (result,) = run.result("probe")["success_criteria_results"]
    assert (result["score"], result["observed_label"]) == (1.0, "yes"), result


def _functions(count: int, body: str) -> str:
    return "".join(
        f"def f{i}(x):\n    y = x + {i}\n    {body}\n    return [y for _ in range(3)]\n\n" for i in range(count)
    )


def test_reference_comparison_reads_as_in_coder_eval(tmp_path: Path, system_cli: SystemCli) -> None:
    """`ast` over a reference of 200+ nodes took difflib's autojunk off (0.29 where coder_eval says 0.05 on its
    pair); an `agent_file` glob naming one file was "file not found"; a missing or empty `reference_file`, the
    task's mistake, was the agent's FAILURE."""
    import ast
    import difflib

    agent_code, reference = _functions(20, "if y: y -= 1"), _functions(22, "while y: y -= 1")
    write(tmp_path / "tpl" / "agent_v2.py", agent_code)
    write(tmp_path / "refdir" / "ref.py", reference)
    checks = [
        {"type": "reference_comparison", "agent_file": "agent_*.py", "reference_file": "ref.py", "description": "a"}
    ]
    sandbox = {"python": None, "template_sources": [{"type": "template_dir", "path": "tpl"}]}
    changes = {"sandbox": sandbox, "reference": {"directory": "refdir"}, "success_criteria": checks}
    task = replay_task_file(tmp_path, "ref", [{"text": "done"}], **changes)
    outcome, run = system_cli.run(task, env={})

    shapes = [[type(n).__name__ for n in ast.walk(ast.parse(code))] for code in (agent_code, reference)]
    expected = difflib.SequenceMatcher(None, *shapes).ratio()  # coder_eval's ast_similarity
    assert expected != difflib.SequenceMatcher(None, *shapes, autojunk=False).ratio()
    (result,) = run.result("ref")["success_criteria_results"]
    assert (result["score"], result["error"]) == (pytest.approx(expected), None), (result, outcome.output)

    write(tmp_path / "refdir" / "empty.py", "")
    for name, says in (("nothere.py", "file not found: refdir/nothere.py"), ("empty.py", "empty: refdir/empty.py")):
        broken = replay_task_file(
            tmp_path,
            f"ref_{name[:5]}",
            [{"text": "done"}],
            **{**changes, "success_criteria": [{**checks[0], "reference_file": name}]},
        )
        assert f"success_criteria.0.reference_file: {says}" in system_cli.invalid(broken).err
