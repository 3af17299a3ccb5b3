"""Edge values a fuzz of the validators found, through the installed ``coder-eval validate``: a JSON Lines string
holding U+2028 (valid JSON, as ``json.dumps(ensure_ascii=False)`` writes it) split its line in two and refused a
valid file; an unknown criterion type of thousands of characters was said whole."""

from __future__ import annotations

import json
from pathlib import Path

from ..support.helpers import write
from .conftest import SystemCli

DATASET_TASK = """\
task_id: ds
description: d
agent: {type: none}
dataset: {paths: [rows.jsonl]}
success_criteria: [{type: file_exists, path: x, description: "${row.v}"}]
"""


def test_a_line_separator_inside_a_json_string_is_no_line_end(tmp_path: Path, system_cli: SystemCli) -> None:
    rows = [{"id": "r0", "v": "line\u2028sep\u2029par\x85nel"}, {"id": "r1", "v": "ok"}]
    write(tmp_path / "rows.jsonl", "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    write(tmp_path / "ds.yaml", DATASET_TASK)
    outcome = system_cli("list", "ds.yaml", env={})
    assert outcome.code == 0 and outcome.out.split() == ["default", "ds/r0", "default", "ds/r1"], outcome.output


def test_an_unknown_type_of_any_length_is_said_shortly(tmp_path: Path, system_cli: SystemCli) -> None:
    task = DATASET_TASK.replace("dataset: {paths: [rows.jsonl]}\n", "").replace("file_exists", "f" * 10_000)
    write(tmp_path / "t.yaml", task.replace("${row.v}", "d"))
    (line,) = system_cli.invalid(Path("t.yaml")).err.splitlines()
    assert line.startswith("t.yaml:4: success_criteria.0: unknown type 'ffff") and len(line) < 1000, line[:200]


def test_a_dataset_with_a_byte_order_mark_is_read_as_a_task_file_with_one_is(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    write(tmp_path / "rows.jsonl", '\ufeff{"id": "r0", "v": "a"}\n{"id": "r1", "v": "b"}\n')
    write(tmp_path / "ds.yaml", DATASET_TASK)
    outcome = system_cli("list", "ds.yaml", env={})
    assert outcome.code == 0 and outcome.out.split() == ["default", "ds/r0", "default", "ds/r1"], outcome.output


def test_an_unterminated_string_says_where_it_starts(tmp_path: Path, system_cli: SystemCli) -> None:
    write(tmp_path / "rows.jsonl", '{"id": "r0", "v": "a"}\n{"id": "r1", "v": "b}\n')
    write(tmp_path / "ds.yaml", DATASET_TASK)
    (line,) = system_cli.invalid(Path("ds.yaml")).err.splitlines()
    assert line == "rows.jsonl:2: dataset.paths.0: invalid JSON: Unterminated string starting at column 19", line
