"""pass@k's ``rows_left_out`` counts a row whose replicates all ended in ERROR (analysts.md: the rows with fewer than
k replicates; such a row has none). It was not counted at all, so a run whose rows half errored said nothing was
left out."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from coder_eval_dagster.core.compare.analysis import compare_variants
from coder_eval_dagster.core.compare.rows import read_run_rows

from ..support.synthetic_runs import evaluation, write_run

STATUS = {"S": "SUCCESS", "F": "FAILURE", "E": "ERROR"}
# row -> one letter per replicate: t/3 and the whole base task u ended in ERROR every time
OUTCOMES = {"t/1": "SS", "t/2": "SF", "t/3": "EE", "t/4": "SE", "u/1": "EE"}


def write_outcomes(runs: Path) -> Path:
    rows = [
        evaluation("a", task_id, STATUS[letter], replicate)
        for task_id, letters in OUTCOMES.items()
        for replicate, letter in enumerate(letters)
    ]
    return write_run(runs, datetime(2026, 12, 5, 2, 0, tzinfo=UTC), rows)


def test_a_row_with_every_replicate_an_error_is_left_out_at_every_k(tmp_path: Path) -> None:
    (arm,) = compare_variants(read_run_rows(write_outcomes(tmp_path / "runs"))).arms
    # k=1: t/1, t/2, t/4 (1, 0.5, 1); k=2: t/1, t/2 (t/4 has one replicate)
    assert [(f.k, f.rows, f.rows_left_out) for f in arm.pass_k] == [(1, 3, 2), (2, 2, 3)]
    assert arm.pass_k[0].pass_at_k == pytest.approx(2.5 / 3)
    by_task = {task.base_task_id: [(f.k, f.rows, f.rows_left_out) for f in task.pass_k] for task in arm.pass_k_by_task}
    assert by_task == {"t": [(1, 3, 1), (2, 2, 2)], "u": []}  # u has no replicate to give a figure
