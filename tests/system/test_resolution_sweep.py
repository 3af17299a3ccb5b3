"""A user's runs over a folder through the installed ``coder-eval``: a parked task whose dataset is not there yet,
a task whose JSONL dataset is broken, and a replayed dialog run with ``--repeats``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from coder_eval_dagster.core.resolution import SKIP_TRUE

from ..support.helpers import write
from .conftest import SystemCli, only_run, task_file

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ROW_CRITERION = [{"type": "run_command", "command": "echo ${row.v}", "description": "row"}]


def _agentless(folder: Path, task_id: str, **changes: object) -> Path:
    return task_file(folder, task_id, **{"agent": {"type": "none"}, **changes})


def test_a_parked_task_is_skipped_without_reading_its_dataset(tmp_path: Path, system_cli: SystemCli) -> None:
    _agentless(tmp_path / "tasks", "ok")
    parked = _agentless(
        tmp_path / "tasks", "parked", skip=True, dataset={"paths": ["missing.jsonl"]}, success_criteria=ROW_CRITERION
    )
    outcome, run = system_cli.run(tmp_path / "tasks", env={})
    assert outcome.code == 0, outcome.output
    (skipped,) = run.summary["skipped_tasks"]
    assert (skipped["path"], skipped["reason"], skipped["task_id"]) == (str(parked), SKIP_TRUE, "parked")
    assert [task["task_id"] for task in run.summary["task_results"]] == ["ok"] and run.summary["passed"] is True
    validated = system_cli("validate", tmp_path / "tasks", env={})
    assert validated.code == 0 and f"OK {parked}" in validated.output, validated.output
    write(
        tmp_path / "tasks/again.yaml",
        (tmp_path / "tasks/ok.yaml").read_text().replace("task_id: ok", "task_id: parked"),
    )
    # its replacement beside it (the old version parked): the parked file claims no id, as in coder_eval
    replaced = system_cli("validate", tmp_path / "tasks", env={})
    assert replaced.code == 0 and "duplicate" not in replaced.output, replaced.output
    again = system_cli("run", tmp_path / "tasks", "--runs-dir", tmp_path / "again", env={})
    assert again.code == 0, again.output
    assert sorted(task["task_id"] for task in only_run(tmp_path / "again").summary["task_results"]) == ["ok", "parked"]


def test_a_task_with_a_broken_jsonl_is_left_out_and_the_rest_runs(tmp_path: Path, system_cli: SystemCli) -> None:
    _agentless(tmp_path / "tasks", "ok")
    write(tmp_path / "tasks/rows.jsonl", '{"id": "r1", "v": 1}\n{"id": "r1", "v": 2}\n')
    broken = _agentless(tmp_path / "tasks", "broken", dataset={"paths": ["rows.jsonl"]}, success_criteria=ROW_CRITERION)
    outcome, run = system_cli.run(tmp_path / "tasks", env={})
    assert outcome.code == 1, outcome.output
    assert [task["task_id"] for task in run.summary["task_results"]] == ["ok"] and run.summary["passed"] is False
    (skipped,) = run.summary["skipped_tasks"]
    assert skipped["path"] == str(broken) and "duplicate row id 'r1'" in skipped["reason"]


def test_repeats_apply_to_a_replayed_dialog(tmp_path: Path, system_cli: SystemCli) -> None:
    shutil.copytree(REPO / "tasks/replay_dialog", tmp_path / "replay_dialog")
    outcome, run = system_cli.run(tmp_path / "replay_dialog/task.yaml", "--repeats", "2", env={})
    assert outcome.code == 0, outcome.output
    assert sorted(task["replicate_index"] for task in run.summary["task_results"]) == [0, 1]


YAML_MISTAKES = {
    # a quote never closed: the parser notices at the end of the file; said where the quote opens
    'task_id: t\ndescription: "d\nagent: {type: none}\n': (
        ":2: (document): YAML syntax error (line 4, column 1): found unexpected end of stream, while scanning a "
        "quoted scalar that starts at line 2, column 14 (a quote or bracket never closed?)"
    ),
    "task_id: t\nsandbox:\n\tpython: null\n": ":3: (document): YAML syntax error (line 3, column 1): ",
    'task_id: t\ndescription: "\\d+"\n': (
        ":2: (document): YAML syntax error (line 2, column 15): found unknown escape character, while parsing a "
        "quoted scalar that starts at line 2, column 14; inside double quotes a backslash starts an escape: "
        "write \"\\\\d\", or use single quotes: '\\d'"
    ),
}


@pytest.mark.parametrize("text", YAML_MISTAKES, ids=["unclosed quote", "tab", "escape"])
def test_a_yaml_mistake_is_said_where_it_was_made_with_a_hint(tmp_path: Path, system_cli: SystemCli, text: str) -> None:
    task = write(tmp_path / "t.yaml", text)
    validated = system_cli("validate", task, env={})
    assert validated.code == 1 and validated.err.startswith(f"{task}{YAML_MISTAKES[text]}"), validated.err
    if "\t" in text:
        assert validated.err.rstrip().endswith("; a tab cannot indent YAML: indent with spaces"), validated.err


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (
            b"task_id: t\ndescription: caf\xe9\n",
            ":2: (document): cannot read file (save it as UTF-8): byte 0xe9 at column 17",
        ),
        (
            b'task_id: t\ndescription: "a\x00b"\n',
            ":2: (document): YAML error: the character U+0000 at column 16 is not",
        ),
        (  # libyaml counts bytes: after two 3-byte characters it was said 4 columns too far
            'task_id: t\ndescription: "\u6f22\u5b57"\nnote: "x\x07"\n'.encode(),
            ":3: (document): YAML error: the character U+0007 at column 9 is not",
        ),
    ],
    ids=["latin-1 byte", "NUL", "after non-ASCII text"],
)
def test_a_byte_yaml_cannot_hold_is_said_at_its_line(
    tmp_path: Path, system_cli: SystemCli, data: bytes, said: str
) -> None:
    """Both were reported at line 1, as an offset into the whole file."""
    task = tmp_path / "t.yaml"
    task.write_bytes(data)
    validated = system_cli("validate", task, env={})
    assert validated.code == 1 and validated.err.startswith(f"{task}{said}"), validated.err


def test_a_dataset_file_named_to_validate_is_said_to_be_one(system_cli: SystemCli) -> None:
    """It was parsed as a task file: a YAML syntax error at its line 2."""
    dataset = REPO / "datasets/arithmetic.jsonl"
    validated = system_cli("validate", dataset, env={})
    assert validated.code == 1, validated.output
    assert (
        validated.err
        == f"a dataset file, not a task: give the task file that names it (its rows are checked with it): {dataset}\n"
    )


def test_a_block_of_the_wrong_shape_is_said_in_the_files_terms(tmp_path: Path, system_cli: SystemCli) -> None:
    """Pydantic's own words named the model's class ("a valid dictionary or instance of AgentConfig") and a
    criterion with no type "Unable to extract tag using discriminator 'type'"."""
    task, lines = _refused(
        tmp_path,
        system_cli,
        "task_id: t1\ndescription: d\nagent: [none]\nsandbox: {python: null}\npre_run: [ls]\n"
        "success_criteria:\n  - {path: a, description: x}\n",
    )
    assert lines == [
        f"{task}:3: agent: expected a mapping (key: value lines, or {{key: value}}), got a list ['none']",
        f"{task}:5: pre_run.0: expected a mapping (key: value lines, or {{key: value}}), got the text 'ls'",
        f"{task}:7: success_criteria.0.type: Field required",
    ]


def _refused(tmp_path: Path, system_cli: SystemCli, text: str) -> tuple[Path, list[str]]:
    """``validate`` of a task file holding ``text``: the file, and the lines it was refused with, sorted."""
    task = write(tmp_path / "t.yaml", text)
    validated = system_cli("validate", task, env={})
    assert validated.code == 1, validated.output
    return task, sorted(validated.err.splitlines())


def test_a_trajectorys_unknown_row_field_is_said_at_its_line(tmp_path: Path, system_cli: SystemCli) -> None:
    """It was one line with neither line nor field: ``unknown row field(s) fiel in ${row.…}: tr.yaml``."""
    write(tmp_path / "tr.yaml", 'turns:\n  - calls:\n      - {tool: Write, path: "${row.fiel}", content: hi}\n')
    task = _agentless(
        tmp_path,
        "rd",
        initial_prompt="p",
        agent={"type": "replay", "trajectory": "tr.yaml"},
        dataset={"rows": [{"id": "a", "file": "x.txt"}]},
    )
    validated = system_cli("validate", task, env={})
    assert validated.code == 1, validated.output
    assert f"{tmp_path / 'tr.yaml'}:3: turns.0.calls.0.path: unknown row field fiel (did you mean `file`?)" in (
        validated.err
    )


def test_an_unknown_row_field_in_a_typed_field_is_said_as_such(tmp_path: Path, system_cli: SystemCli) -> None:
    """Left in ``timeout: "${row.zz}"``, the placeholder was said as "Input should be a valid number"."""
    criterion = {"type": "run_command", "command": "true", "timeout": "${row.zz}", "description": "x"}
    task = _agentless(tmp_path, "typed", dataset={"rows": [{"id": "a", "a": 1}]}, success_criteria=[criterion])
    validated = system_cli("validate", task, env={})
    assert validated.code == 1, validated.output
    assert "success_criteria.0: unknown row field(s) zz in ${row.…} (row 'a' at" in validated.err, validated.err
    assert "valid number" not in validated.err


def test_a_problem_a_d_override_causes_is_said_once_and_blamed_on_it(tmp_path: Path, system_cli: SystemCli) -> None:
    """A dataset path set by -D that is not there was said twice (once without the -D); a value that is no YAML
    was PyYAML's own text, ``in "<unicode string>", line 1, column 1``."""
    write(tmp_path / "rows.jsonl", '{"id": "r1"}\n')
    task = _agentless(tmp_path, "ds", dataset={"paths": ["rows.jsonl"]})
    missing = system_cli("run", task, "--runs-dir", system_cli.runs, "-D", "dataset.paths=[nope.jsonl]", env={})
    assert missing.code == 2 and missing.err.count("file not found: nope.jsonl") == 1, missing.err
    assert "(value set by -D dataset.paths)" in missing.err
    broken = system_cli("run", task, "--runs-dir", system_cli.runs, "-D", "run_limits.task_timeout=[1,2", env={})
    assert broken.code == 2 and "<unicode string>" not in broken.err, broken.err
    assert broken.err.startswith("-D: run_limits.task_timeout: value '[1,2' is not valid YAML ("), broken.err
    for override in ("run_limits.task_timeout=[1,2", "run_limits", "run_limits.nope=1"):  # list: usage, as run (was 1)
        listed = system_cli("list", task, "-D", override, env={})
        assert listed.code == 2 and listed.err.startswith("-D"), listed.output


def test_a_nul_in_a_command_or_a_path_is_refused_at_load(tmp_path: Path, system_cli: SystemCli) -> None:
    """Accepted, it ended every row as ERROR at run time (`embedded null byte`)."""
    task, lines = _refused(
        tmp_path,
        system_cli,
        'task_id: t1\ndescription: d\nagent: {type: none}\nsandbox: {python: null}\npre_run: [{command: "echo \\0"}]\n'
        'success_criteria:\n  - {type: file_exists, path: "a\\0b", description: x}\n',
    )
    assert lines == [
        f"{task}:5: pre_run.0.command: holds a NUL character, which no command can carry",
        f"{task}:7: success_criteria.0.path: holds a NUL character, which no file name can",
    ]


def test_a_file_name_no_file_system_can_hold_is_refused_at_its_line(tmp_path: Path, system_cli: SystemCli) -> None:
    """A NUL in a starter file's path passed validate and ended the row as ERROR; a name over 255 bytes in a file
    field stopped validate with one line naming neither file nor field; in an experiment, an internal error."""
    long = "x" * 256
    too_long = f"a name in it is over the 255 bytes a file name can hold ({'x' * 20}...)"
    for source, problem in [
        (
            '{type: starter_files, files: [{path: "a\\0b"}]}',
            "files.0.path: holds a NUL character, which no file name can",
        ),
        (f"{{type: template_dir, path: {long}}}", f"path: {too_long}"),
        (  # short names, a whole path past Linux's 4,096 bytes: validate stopped at it with one line
            f"{{type: template_dir, path: {'abcdefgh/' * 500}}}",
            f"path: is over the 4095 bytes a path can hold ({'abcdefgh/' * 2}ab...)",
        ),
    ]:
        task, lines = _refused(
            tmp_path,
            system_cli,
            f"task_id: t1\ndescription: d\nagent: {{type: none}}\nsandbox:\n  template_sources:\n    - {source}\n"
            "success_criteria: [{type: file_exists, path: a, description: x}]\n",
        )
        assert lines == [f"{task}:6: sandbox.template_sources.0.{problem}"]
    experiment = write(
        tmp_path / "e.yaml",
        f'experiment_id: e\nvariants:\n  - {{variant_id: a, initial_prompt_file: "p\\0"}}\n'
        f"  - {{variant_id: b, agent: {{system_prompt_file: {long}}}}}\n",
    )
    validated = system_cli("validate", experiment, env={})
    assert validated.code == 1, validated.output
    assert sorted(validated.err.splitlines()) == [
        f"{experiment}:3: variants.0.initial_prompt_file: holds a NUL character, which no file name can",
        f"{experiment}:4: variants.1.agent.system_prompt_file: {too_long}",
    ]


def test_a_key_yaml_reads_as_no_text_is_refused_at_its_line(tmp_path: Path, system_cli: SystemCli) -> None:
    """``null:``, ``true:`` and a date as keys were said at line 1 as ``None``, ``1`` and ``"datetime.date(...)"``;
    one under a criterion at the criterion's line."""
    task, lines = _refused(
        tmp_path,
        system_cli,
        "task_id: t1\ndescription: d\nagent: {type: none}\nnull: 1\ntrue: 2\n2024-01-01: 3\n"
        "success_criteria:\n  - type: file_exists\n    path: a\n    description: x\n    ~: 4\n",
    )
    assert lines == [
        f"""{task}:11: success_criteria.0.~: a key must be text, and '~' is read as null: write it in quotes ("~")""",
        f"""{task}:4: null: a key must be text, and 'null' is read as null: write it in quotes ("null")""",
        f"""{task}:5: true: a key must be text, and 'true' is read as a boolean: write it in quotes ("true")""",
        f"{task}:6: 2024-01-01: a key must be text, and '2024-01-01' is read as a date: write it in quotes "
        '("2024-01-01")',
    ]


def test_a_network_entry_no_host_can_match_is_one_line(tmp_path: Path, system_cli: SystemCli) -> None:
    """``*:443`` (meant as any host) and ``h :80`` passed validate and allowed nothing; a refused block was said
    twice, once as no network name (``sandbox.network.literal['bridge','none','host']``)."""
    for entry, problem in [("*:443", "a wildcard matches no host"), ("h :80", "is not host:port")]:
        _, lines = _refused(
            tmp_path,
            system_cli,
            f'task_id: t1\ndescription: d\nagent: {{type: none}}\nsandbox: {{network: {{allow: ["{entry}"]}}}}\n'
            "success_criteria: [{type: file_exists, path: a, description: x}]\n",
        )
        assert len(lines) == 1 and f":4: sandbox.network.allow: '{entry}'" in lines[0] and problem in lines[0], lines
    for entry in ("example.com:443", "[::1]:8080", "127.0.0.1:5432", "my_host.internal.:80"):
        task = write(
            tmp_path / "ok.yaml",
            f'task_id: t1\ndescription: d\nagent: {{type: none}}\nsandbox: {{network: {{allow: ["{entry}"]}}}}\n'
            "success_criteria: [{type: file_exists, path: a, description: x}]\n",
        )
        assert system_cli("validate", task, env={}).code == 0, entry


def test_a_jsonl_row_with_a_key_given_twice_is_refused_at_its_line(tmp_path: Path, system_cli: SystemCli) -> None:
    """``{"id": "r1", "id": "r2"}`` was silently row r2 (the YAML files' duplicate keys were already refused)."""
    write(tmp_path / "rows.jsonl", '{"id": "r0"}\n{"id": "r1", "id": "r2"}\n')
    task = _agentless(tmp_path, "dup", dataset={"paths": ["rows.jsonl"]})
    validated = system_cli("validate", task, env={})
    assert validated.code == 1, validated.output
    assert validated.err.startswith(f"{tmp_path / 'rows.jsonl'}:2: dataset.paths.0: the key 'id' is given twice"), (
        validated.err
    )


def test_a_broken_link_in_a_folder_is_named_as_written(tmp_path: Path, system_cli: SystemCli) -> None:
    """It was named by its target (``/nonexistent:1: (document): cannot read file: ...``)."""
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks/dangling.yaml").symlink_to(tmp_path / "nonexistent.yaml")
    validated = system_cli("validate", tmp_path / "tasks", env={})
    assert validated.code == 1, validated.output
    assert (
        validated.err
        == f"{tmp_path / 'tasks/dangling.yaml'}:1: (document): a broken link, to {tmp_path}/nonexistent.yaml\n"
    )


def test_an_unnamable_path_from_a_row_a_judge_a_dataset_or_an_experiment_is_a_line(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """Each was an internal error (exit 3), a line naming no file or field, or passed validate to fail the run."""
    write(tmp_path / "rows.jsonl", '{"id": "nul", "n": "a\\u0000b"}\n')
    row_named = write(
        tmp_path / "rt.yaml",
        'task_id: rt\ndescription: d\nagent: {type: replay, trajectory: "tr/${row.n}"}\n'
        "dataset: {paths: [rows.jsonl]}\nsuccess_criteria: [{type: file_exists, path: a, description: x}]\n",
    )
    judged = write(
        tmp_path / "jt.yaml",
        "task_id: jt\ndescription: d\nagent: {type: none}\n"
        'success_criteria: [{type: llm_judge, prompt: p, files: ["$TASK_DIR/a\\0b"], description: x}]\n',
    )
    rows_at = write(
        tmp_path / "ds.yaml",
        f"task_id: ds\ndescription: d\nagent: {{type: none}}\ndataset: {{paths: [{'a' * 256}]}}\n"
        "success_criteria: [{type: file_exists, path: a, description: x}]\n",
    )
    validated = system_cli("validate", row_named, judged, rows_at, env={})
    assert validated.code == 1, validated.output
    assert sorted(validated.err.splitlines()) == [
        f"{rows_at}:4: dataset.paths.0: a name in it is over the 255 bytes a file name can hold ({'a' * 20}...)",
        f"{judged}:4: success_criteria.0.files.0: holds a NUL character, which no file name can",
        f"{row_named}:3: agent.trajectory: holds a NUL character, which no file name can: 'tr/a\\x00b' "
        f"(row 'nul' at {tmp_path / 'rows.jsonl'}:1)",
    ]
    experiment = write(tmp_path / "e.yaml", 'experiment_id: e\ntasks: ["a\\0b"]\nvariants: [{variant_id: a}]\n')
    refused = system_cli("validate", "-e", experiment, env={})
    assert (refused.code, refused.err.strip()) == (
        1,
        f"{experiment}:2: tasks.0: holds a NUL character, which no file name can",
    )


def test_a_key_that_is_no_text_is_said_through_a_merge_key_and_in_a_d_value(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """``<<: {12: a}`` was said at line 1 in pydantic's words; a -D value's ``{null: 1}`` as ``agent.None``."""
    task, lines = _refused(
        tmp_path,
        system_cli,
        "task_id: t1\ndescription: d\nagent: {type: none}\n<<: {12: a}\n"
        "success_criteria: [{type: file_exists, path: a, description: x}]\n",
    )
    assert lines == [f"""{task}:4: 12: a key must be text, and '12' is read as a number: write it in quotes ("12")"""]
    ok = _agentless(tmp_path, "ok")
    listed = system_cli("list", ok, "-D", "agent={type: none, null: 1}", env={})
    assert (listed.code, listed.err.strip()) == (
        2,
        "-D: agent: a key must be text, and 'null' is read as null: write it in quotes",
    )
