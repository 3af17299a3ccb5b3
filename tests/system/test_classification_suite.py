"""A dataset's classification metrics pair only the rows a classification came of, as coder_eval's aggregate does,
through the installed CLI."""

from __future__ import annotations

import json
import re

import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def test_rows_without_a_classification_are_left_out_of_the_pairs(system_cli: SystemCli) -> None:
    """A row that ended as ERROR before its criteria ran, and one whose check could not be made (its glob matched
    two files), are no (expected, (none)) pairs: they lower completion_rate and nothing else. They were counted as
    observed (none), so a recall gate coder_eval passes failed here."""
    folder = system_cli.folder / "tasks"
    rows = [
        {"id": "ra", "ans": "yes", "exp": "yes", "files": 1, "err": 0},
        {"id": "rb", "ans": "no", "exp": "yes", "files": 1, "err": 0},
        {"id": "rc", "ans": "no", "exp": "no", "files": 1, "err": 0},
        {"id": "rd", "ans": "no", "exp": "no", "files": 1, "err": 1},  # ERROR: its pre_run fails
        {"id": "re", "ans": "no", "exp": "no", "files": 2, "err": 0},  # two answer files: refusing to guess
    ]
    (folder / "rows.jsonl").parent.mkdir(parents=True, exist_ok=True)
    (folder / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    writes = "test ${row.err} = 0 && for i in $(seq ${row.files}); do printf %s ${row.ans} > answer$i.txt; done"
    classify = {
        "type": "classification_match",
        "description": "label matches",
        "path": "answer*.txt",
        "expected_label": "${row.exp}",
        "allowed_labels": ["yes", "no"],
        "suite_thresholds": {"recall.no": 1.0},
    }
    task_file(
        folder,
        "labels",
        agent={"type": "none"},
        dataset={"paths": ["rows.jsonl"]},
        pre_run=[{"command": writes}],
        success_criteria=[classify],
    )
    outcome, run = system_cli.run(folder, env={})
    assert outcome.code == 1, outcome.output  # rb and re fail, rd is an ERROR; the gate itself is met
    (entry,) = run.summary["suite"]
    metrics = entry["metrics"]
    # scored: the three classified rows (re has a 0 but no label, as a row that never ran has none)
    assert (metrics["accuracy"], metrics["recall.no"], metrics["completion_rate"]) == (0.666667, 1.0, 0.6)
    assert (metrics["count"], metrics["mean"]) == (3.0, 0.666667)
    assert "precision.(none)" not in metrics and entry["confusion_matrix"] == {
        "yes": {"yes": 1, "no": 1},
        "no": {"no": 1},
    }
    assert [t["passed"] for t in entry["thresholds"]] == [True]
    table = ["| expected \\ predicted | no | yes |", "|---|---|---|", "| no | 1 | 0 |", "| yes | 1 | 1 |"]
    shown = [line.strip() for line in (run.path / "run.md").read_text().splitlines()]
    assert "\n".join(table) in "\n".join(shown)  # the matrix in run.md too (it was in the JSON files only)


def test_a_ci_log_keeps_each_suite_gate_and_each_id_on_one_line(system_cli: SystemCli) -> None:
    """Without a terminal, rich wrapped at 80 columns: a gate's verdict went to a line of its own (a CI grep for
    it found nothing) and the table cut long ids short."""
    folder = system_cli.folder / "tasks"
    long_id = "a_task_id_long_enough_to_need_more_than_eighty_columns_on_its_line_" + "x" * 20
    check = {"type": "run_command", "description": "the row's check", "command": "test ${row.id} = r1"}
    rows = {"rows": [{"id": "r1"}, {"id": "r2"}]}
    task_file(
        folder,
        long_id,
        agent={"type": "none"},
        dataset=rows,
        success_criteria=[check | {"suite_thresholds": {"mean": 1.0}}],
    )
    for colour in ({}, {"FORCE_COLOR": "1"}):  # CI services often force colour: rich then takes it for a terminal
        outcome = system_cli("run", folder, "--runs-dir", system_cli.runs, env=colour)  # no COLUMNS, as in CI
        assert outcome.code == 1, outcome.output
        lines = re.sub(r"\x1b\[[0-9;]*m", "", outcome.out).splitlines()
        assert f"suite {long_id} [default] #0 run_command mean 0.5 >= 1: NOT met" in lines, outcome.out
        assert any(f"{long_id}/r2" in line and "FAILURE" in line for line in lines), outcome.out
        assert "scored: 2/2" in outcome.err and "\x1b[?25l" not in outcome.err  # progress lines, no live bars
