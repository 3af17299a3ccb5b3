"""task.json's source_yaml is the task file as the run's one resolution read it: its row-tasks share one text (the
snapshot barely grows), and a snapshot pickled before the text was kept still records the file (read now)."""

from __future__ import annotations

import json
import pickle
from dataclasses import replace
from pathlib import Path

from coder_eval_dagster.core import safe_unpickle
from coder_eval_dagster.core.evaluation import task_config
from coder_eval_dagster.core.resolution import RowTask, resolve
from coder_eval_dagster.core.run_spec import RunSpec

from ..support.helpers import write

TASK = """\
task_id: ds
description: rows\r
agent: {type: none}
sandbox: {python: null}
dataset: {paths: [rows.jsonl], id_field: id}
success_criteria: [{type: file_contains, path: v.txt, includes: ["${row.v}"], description: v}]
"""


def _row_tasks(tmp_path: Path, rows: int = 3) -> list[RowTask]:
    write(tmp_path / "rows.jsonl", "".join(json.dumps({"id": f"r{i}", "v": str(i)}) + "\n" for i in range(rows)))
    task = write(tmp_path / "ds.yaml", TASK + "#" * 2000 + "\n")
    result = resolve(RunSpec(task_paths=[str(task)]))
    assert not result.problems, result.problems
    return result.row_tasks


def test_the_text_read_is_recorded_whatever_the_file_says_later(tmp_path: Path) -> None:
    row_tasks = _row_tasks(tmp_path)
    read = (tmp_path / "ds.yaml").read_text(encoding="utf-8")  # (universal newlines, as read_text gives them)
    (tmp_path / "ds.yaml").write_text("task_id: edited\n", encoding="utf-8")
    assert task_config(row_tasks[0]).source_yaml == read
    (tmp_path / "ds.yaml").unlink()
    assert task_config(row_tasks[1]).source_yaml == read


def test_the_rows_share_one_text_in_the_snapshot(tmp_path: Path) -> None:
    row_tasks = _row_tasks(tmp_path, rows=1000)
    assert len({id(rt.source_text) for rt in row_tasks}) == 1
    without = [replace(rt, source_text=None) for rt in row_tasks]
    grown = len(pickle.dumps(row_tasks, protocol=5)) - len(pickle.dumps(without, protocol=5))
    assert grown < len(row_tasks[0].source_text or "") + 4 * len(row_tasks), grown  # the text once, a reference each


def test_a_snapshot_written_before_the_text_was_kept_reads_the_file(tmp_path: Path) -> None:
    (old,) = _row_tasks(tmp_path, rows=1)
    object.__delattr__(old, "source_text")  # as a RowTask pickled by an earlier coder-eval
    loaded = safe_unpickle.loads(pickle.dumps(old, protocol=5))
    (tmp_path / "ds.yaml").write_text("task_id: now\n", encoding="utf-8")
    assert task_config(loaded).source_yaml == "task_id: now\n"  # type: ignore[arg-type]
