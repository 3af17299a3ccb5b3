"""Dataset files and strata (defect sweep, items 2-5): each bad JSONL line is told at its own line, a file that is
not JSONL says so in a few lines, a row nested too deep is refused at load, and rows without a stratum share one."""

from __future__ import annotations

import json
from pathlib import Path

from coder_eval_dagster.core.datasets import Row, sample_rows
from coder_eval_dagster.core.yamlio import MAX_DEPTH

from ..support.helpers import criterion, run_cli, task_with, write_task


def dataset_task(folder: Path, data: bytes, name: str = "rows.jsonl") -> Path:
    (folder / name).write_bytes(data)
    checks = [criterion("run_command", command="true", description="row ${row.id}")]
    return write_task(folder, task_with(dataset={"paths": [name]}, success_criteria=checks))


def nested(levels: int) -> bytes:
    """A row whose whole depth (the row, its lists, the innermost scalar) is ``levels``."""
    lists = levels - 2
    return b'{"id": "r1", "v": ' + b"[" * lists + b"1" + b"]" * lists + b"}\n"


def test_a_row_nested_past_the_yaml_limit_is_refused_at_its_line(tmp_path: Path) -> None:
    for levels in (MAX_DEPTH + 1, 500, 2000):  # 500 used to crash the run's pickling, 2000 validate itself
        path = dataset_task(tmp_path, b'{"id": "r0"}\n' + nested(levels))
        result = run_cli("validate", path)
        expected = f"{tmp_path}/rows.jsonl:2: dataset.paths.0: row refused: it nests deeper than {MAX_DEPTH} levels"
        assert result.code == 1 and expected in result.err, (levels, result.err)


def test_a_row_at_the_limit_is_read(tmp_path: Path) -> None:
    result = run_cli("validate", dataset_task(tmp_path, nested(MAX_DEPTH)))
    assert result.code == 0, result.err


def test_a_byte_that_is_not_utf8_is_told_at_its_line_and_column(tmp_path: Path) -> None:
    path = dataset_task(tmp_path, b'{"id": "r1"}\n{"id": "r2"}\n{"id": "r3", "v": "\xff"}\n')
    result = run_cli("validate", path)
    expected = f"{tmp_path}/rows.jsonl:3: dataset.paths.0: cannot read dataset: byte 0xff at column 20 is not UTF-8"
    assert result.code == 1 and expected in result.err, result.err


def test_a_csv_file_says_datasets_are_jsonl_in_a_few_lines(tmp_path: Path) -> None:
    csv = "id,q\n" + "".join(f"r{i},question {i}\n" for i in range(299))
    result = run_cli("validate", dataset_task(tmp_path, csv.encode(), "rows.csv"))
    lines = [line for line in result.err.splitlines() if "rows.csv" in line]
    assert result.code == 1 and len(lines) == 6, result.err
    assert lines[0].startswith(f"{tmp_path}/rows.csv:1: dataset.paths.0: invalid JSON"), lines
    assert "JSON Lines" in lines[0] and "JSON Lines" not in "".join(lines[1:]), lines
    assert lines[-1] == f"{tmp_path}/rows.csv: dataset.paths.0: ... and 295 more line(s) with problems", lines


def test_a_jsonl_file_with_one_bad_line_gets_no_format_hint(tmp_path: Path) -> None:
    result = run_cli("validate", dataset_task(tmp_path, b'{"id": "r1"}\n{"id": \n'))
    expected = f"{tmp_path}/rows.jsonl:2: dataset.paths.0: invalid JSON"
    assert expected in result.err and "JSON Lines" not in result.err, result.err


def test_strata_are_keyed_as_coder_eval_keys_them() -> None:
    """``str(row.get(field, ""))``: rows without the field and with ``""`` share a stratum, null is one of its own
    ("None"; grouped with the others, a seed drew one row fewer than coder_eval 0.12.16 draws)."""
    values: list[dict[str, str | None]] = [{}, {"skill": None}, {"skill": ""}, {"skill": "pdf"}, {"skill": "pdf"}]
    rows = [Row(f"r{i}", {"id": f"r{i}", **v}, f"rows.jsonl:{i + 1}") for i, v in enumerate(values)]
    kept = sample_rows(rows, 1, "skill", seed=3)
    assert len(kept) == 3 and sum(row.values.get("skill") == "pdf" for row in kept) == 1, kept
    assert sum(row.row_id in ("r0", "r2") for row in kept) == 1 and "r1" in [row.row_id for row in kept]


def test_a_stratum_is_the_value_as_coder_eval_writes_it() -> None:
    rows = [Row(f"r{i}", {"id": f"r{i}", "n": n}, f"rows.jsonl:{i + 1}") for i, n in enumerate([1, "1", 2])]
    assert [row.row_id for row in sample_rows(rows, 1, "n", seed=0)] in (["r0", "r2"], ["r1", "r2"])


def test_the_jsonl_hint_example_is_a_valid_row(tmp_path: Path) -> None:
    """The hint's example parses as the row it describes."""
    result = run_cli("validate", dataset_task(tmp_path, b"id,q\n"))
    example = result.err.split("e.g. ", 1)[1].strip()
    assert json.loads(example) == {"id": "r1", "q": "..."}
