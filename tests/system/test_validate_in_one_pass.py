"""Issue 13 item 6, through the installed ``coder-eval``: every problem of a file in one pass. A mistyped key no
longer hides the rules between fields and what is checked after them (template folders, a dataset's rows, the
task's id among the others), a bad experiment id no longer hides its variants, a line of a dataset that is not
JSON no longer hides the other rows' ids; and the repaired copy these are found in says nothing of its own."""

from __future__ import annotations

from pathlib import Path

from ..support.helpers import write
from .conftest import SystemCli

TYPO = """\
    task_id: m1
    description: one pass?
    initial_prompt: "hello"
    agent: {type: none}
    sandbox:
      template_sources:
        - {type: template_dir, path: no/such/dir}
    success_criteria:
      - type: file_exists
        path: a
        descripton: a
"""
TYPO_PROBLEMS = [
    "m1.yaml:9: success_criteria.0.description: Field required",
    "m1.yaml:11: success_criteria.0.descripton: unknown field (not part of the format) (did you mean `description`?)",
    "m1.yaml:3: initial_prompt: a type: none task has no agent to read a prompt",
    "m1.yaml:7: sandbox.template_sources.0.path: folder not found: no/such/dir (relative to the task YAML)",
]


def test_a_mistyped_key_hides_neither_the_rules_between_fields_nor_the_files(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    write(tmp_path / "m1.yaml", TYPO)
    assert system_cli.invalid(Path("m1.yaml")).err.splitlines() == TYPO_PROBLEMS
    run = system_cli("run", "m1.yaml", "--runs-dir", system_cli.runs, env={})
    assert run.code == 2 and not system_cli.runs.exists(), run.output  # nothing runs
    assert [line for line in run.err.splitlines() if line.startswith("m1.yaml")] == TYPO_PROBLEMS


def test_a_mistyped_key_hides_no_row_field(tmp_path: Path, system_cli: SystemCli) -> None:
    write(
        tmp_path / "m2.yaml",
        """\
        task_id: m2
        description: one pass?
        agent: {type: none}
        dataset:
          rows: [{id: r1, x: 1}]
        pre_run:
          - command: "echo ${row.y}"
        success_criteria:
          - type: file_exists
            path: a
            descripton: a
        """,
    )
    assert system_cli.invalid(Path("m2.yaml")).err.splitlines() == [
        "m2.yaml:9: success_criteria.0.description: Field required",
        "m2.yaml:11: success_criteria.0.descripton: unknown field (not part of the format) (did you mean `description`?)",
        "m2.yaml:7: pre_run.0.command: unknown row field(s) y in ${row.…} (row 'r1' at m2.yaml:5)",
    ]


def test_a_mistyped_block_and_a_key_inside_it_are_said_as_written(tmp_path: Path, system_cli: SystemCli) -> None:
    """The key inside the mistyped block is checked too (a second repair), named and placed as the file has it."""
    write(
        tmp_path / "n1.yaml",
        """\
        task_id: n1
        description: a block and a key inside it mistyped
        initial_prompt: hello
        agent: {type: none}
        success_critera:
          - type: file_exists
            path: a
            descripton: a
        """,
    )
    assert system_cli.invalid(Path("n1.yaml")).err.splitlines() == [
        "n1.yaml:1: success_criteria: Field required",
        "n1.yaml:5: success_critera: unknown field (not part of the format) (did you mean `success_criteria`?)",
        "n1.yaml:6: success_critera.0.description: Field required",
        "n1.yaml:8: success_critera.0.descripton: unknown field (not part of the format) (did you mean `description`?)",
        "n1.yaml:3: initial_prompt: a type: none task has no agent to read a prompt",
    ]


def test_a_bad_experiment_id_hides_no_variant_problem(tmp_path: Path, system_cli: SystemCli) -> None:
    write(
        tmp_path / "x2.yaml",
        """\
        experiment_id: "bad id"
        variants:
          - variant_id: a
          - variant_id: a
        """,
    )
    assert system_cli.invalid(Path("x2.yaml")).err.splitlines() == [
        "x2.yaml:1: experiment_id: String should match pattern '^[A-Za-z0-9_][A-Za-z0-9_.\\-]*$'",
        "x2.yaml:4: variants.1.variant_id: duplicate variant_id 'a'",
    ]


def test_a_line_that_is_not_json_hides_no_other_row(tmp_path: Path, system_cli: SystemCli) -> None:
    write(tmp_path / "rows.jsonl", '{"id": "a", "x": 1}\n{"id": "b", "x": 2\n{"x": 3}\n{"id": "a", "x": 4}\n')
    write(
        tmp_path / "d1.yaml",
        """\
        task_id: ds1
        description: bad rows
        agent: {type: none}
        dataset:
          paths: [rows.jsonl]
        success_criteria:
          - type: run_command
            command: "echo ${row.x}"
            description: d
        """,
    )
    assert system_cli.invalid(Path("d1.yaml")).err.splitlines() == [
        "rows.jsonl:2: dataset.paths.0: invalid JSON: Expecting ',' delimiter",
        "rows.jsonl:3: dataset.id_field: row has no 'id' value",
        "rows.jsonl:4: dataset.id_field: duplicate row id 'a' (first at rows.jsonl:1)",
    ]


def test_the_repaired_copy_says_nothing_of_its_own(tmp_path: Path, system_cli: SystemCli) -> None:
    """The copy reads ``"bad id!"`` in a valid spelling another file holds, and the mistyped key's value (a list)
    as a description: neither a duplicate id nor the list is said, only what the file itself gets wrong."""
    write(
        tmp_path / "taken.yaml",
        """\
        task_id: _bad_id_
        description: holds the id the copy of the other file reads
        agent: {type: none}
        success_criteria:
          - {type: file_exists, path: a, description: a}
        """,
    )
    write(
        tmp_path / "s1.yaml",
        """\
        task_id: "bad id!"
        description: no guesses
        initial_prompt: hello
        agent: {type: none}
        success_criteria:
          - type: file_exists
            path: a
            descripton: a
          - type: file_exists
            path: b
            description: b
            zzz: 1
            weight: [not, a, number]
        """,
    )
    listed = system_cli("list", "taken.yaml", "s1.yaml", env={})
    assert listed.code == 1, listed.output
    assert listed.err.splitlines() == [
        "s1.yaml:1: task_id: String should match pattern '^[A-Za-z0-9_][A-Za-z0-9_.\\-]*$'",
        "s1.yaml:6: success_criteria.0.description: Field required",
        "s1.yaml:8: success_criteria.0.descripton: unknown field (not part of the format) (did you mean `description`?)",
        "s1.yaml:12: success_criteria.1.zzz: unknown field (not part of the format)",
        "s1.yaml:13: success_criteria.1.weight: Input should be a valid number",
    ], listed.err  # as the file reads
    write(tmp_path / "s1.yaml", (tmp_path / "s1.yaml").read_text().replace("[not, a, number]", "2"))
    listed = system_cli("list", "taken.yaml", "s1.yaml", env={})
    assert listed.code == 1 and "duplicate" not in listed.err, listed.output
    assert "s1.yaml:3: initial_prompt: a type: none task has no agent to read a prompt" in listed.err.splitlines()
    write(tmp_path / "s1.yaml", (tmp_path / "s1.yaml").read_text().replace("descripton: a", "descripton: [a, b]"))
    said = system_cli.invalid(Path("s1.yaml")).err
    assert "valid string" not in said and "initial_prompt" not in said, said  # its value is no description


def test_a_rule_the_guessed_name_breaks_is_not_said(tmp_path: Path, system_cli: SystemCli) -> None:
    """Read as ``initial_prompt``, the typo clashed with the file's own ``initial_prompt_file`` in the copy: the user
    was told to drop a field they need."""
    write(tmp_path / "p.txt", "hello\n")
    write(tmp_path / "traj.yaml", "turns:\n  - text: done\n")
    task = """\
        task_id: t1
        description: x
        initial_promt: hello
        initial_prompt_file: p.txt
        agent: {type: replay, trajectory: nope.yaml}
        success_criteria: [{type: file_exists, path: a, description: a}]
    """
    write(tmp_path / "t1.yaml", task)
    assert system_cli.invalid(Path("t1.yaml")).err.splitlines() == [
        "t1.yaml:3: initial_promt: unknown field (not part of the format) (did you mean `initial_prompt`?)",
        "t1.yaml:5: agent.trajectory: file not found: nope.yaml (relative to the task YAML)",
    ]


def test_a_key_with_a_dot_is_not_taken_for_a_path(tmp_path: Path, system_cli: SystemCli) -> None:
    """A top-level ``"agent.type"`` key was read as the path agent.type: said again under the repaired block's
    spelling (``agnt.type``, a valid field of the file)."""
    task = """\
        task_id: dots
        description: d
        "agent.type": none
        agnt: {type: none}
        success_criteria: [{type: file_exists, path: x, description: x}]
    """
    write(tmp_path / "dots.yaml", task)
    assert system_cli.invalid(Path("dots.yaml")).err.splitlines() == [
        "dots.yaml:3: agent.type: unknown field (not part of the format) (did you mean `agent`?)",
        "dots.yaml:4: agnt: unknown field (not part of the format) (did you mean `agent`?)",
    ]
