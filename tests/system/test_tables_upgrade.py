"""Analysts' tables across an upgrade that added a column: `pandas.read_parquet(folder)` still shows it.

pandas takes a folder's schema from the first file it finds (the oldest);
a file written before a column existed would hide that column for every
run. The installed `coder-eval run` gives the older files the column, as
nulls, the first time it writes after such an upgrade.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from ..support.helpers import agentless_task, write_task
from .conftest import SystemCli

pytestmark = pytest.mark.slow


def test_a_column_added_by_an_upgrade_reads_with_pandas(tmp_path: Path) -> None:
    cli = SystemCli(tmp_path)
    task = write_task(
        tmp_path / "tasks",
        agentless_task(
            task_id="tabled",
            sandbox={"python": None},
            success_criteria=[{"type": "run_command", "command": "true", "description": "runs"}],
        ),
    )
    first, _ = cli.run(task, env={})
    assert first.code == 0, first.output
    folder = cli.runs / "tables" / "task_results"
    (older,) = folder.glob("*/*.parquet")
    written = pq.ParquetFile(older).read()
    newest_column = written.schema.names[-1]
    pq.write_table(written.drop_columns([newest_column]), older)  # as a release before that column wrote it
    assert newest_column not in pd.read_parquet(folder).columns  # what an analyst would have seen

    second = cli("run", task, "--runs-dir", cli.runs, env={})
    assert second.code == 0, second.output
    table = pd.read_parquet(folder)
    assert len(table) == 2 and newest_column in table.columns
    by_run = table.set_index("run_id")[newest_column]
    older_run = written.column("run_id")[0].as_py()
    assert pd.isna(by_run[older_run])  # the older run's rows: null in the added column, the rest unchanged
    assert pq.ParquetFile(older).read().drop_columns([newest_column]).equals(written.drop_columns([newest_column]))
