"""What the terminal and run.md say of a run the budget stopped and of the flaky-rows gate: one money format for the
spend and the budget, evaluations counted in the singular or plural, a share and its gate both in percent, and
progress lines that never count an evaluation never started as done (the installed CLI: test_run_budget.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.cli_run import StageProgress, print_summary
from coder_eval_dagster.core.models.report import RunSummary
from coder_eval_dagster.core.reports.run_summary import render_run_md

from .test_report_notes import evaluation, summary


def budget_stopped(left: int) -> RunSummary:
    not_run = [{"task_id": "cut", "variant_id": "default", "replicate": n, "reason": "budget"} for n in range(left)]
    budget = {"max_usd": 0.1, "spent_usd": 0.11, "exhausted": True}
    return summary(evaluation(), not_run=not_run, not_run_count=left, budget=budget)


def printed(report: RunSummary, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    print_summary(report, tmp_path)
    return capsys.readouterr().out


@pytest.mark.parametrize(("left", "said"), [(1, "1 evaluation not run"), (3, "3 evaluations not run")])
def test_the_budget_line_says_spend_and_budget_alike_and_counts_in_words(
    left: int, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = budget_stopped(left)
    assert f"budget spent: $0.1100 of $0.1000; {said}\n" in printed(report, tmp_path, capsys)
    assert f"Budget spent: $0.1100 of $0.1000: {said} (`not_run` in run.json); the run fails." in render_run_md(report)


@pytest.mark.parametrize(
    ("flaky", "terminal", "run_md"),
    [
        (
            {"share": 0.95, "max_share": 0.5, "passed": False},
            "flaky rows 95.0% (max_flaky_share 50.0%): NOT met",
            "Flaky rows: 95.0% of repeated rows (max_flaky_share 50.0%): NOT met",
        ),
        (  # as many places as it takes to read the verdict from the two figures
            {"share": 0.20004, "max_share": 0.2, "passed": False},
            "flaky rows 20.004% (max_flaky_share 20.0%): NOT met",
            "Flaky rows: 20.004% of repeated rows (max_flaky_share 20.0%): NOT met",
        ),
        (
            {"share": 0.125, "max_share": 0.125, "passed": True},
            "flaky rows 12.5% (max_flaky_share 12.5%): met",
            "Flaky rows: 12.5% of repeated rows (max_flaky_share 12.5%): met",
        ),
    ],
)
def test_the_flaky_gate_says_its_share_and_its_maximum_both_in_percent(
    flaky: dict[str, Any], terminal: str, run_md: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = summary(evaluation(), flaky=flaky)
    assert terminal in printed(report, tmp_path, capsys)
    assert run_md in render_run_md(report)


def stage_events(progress: StageProgress, status: str, count: int) -> None:
    for _ in range(count):
        for stage in ("setup", "agent", "finish"):
            progress("stage", {"stage": stage, "task_id": "t", "status": status})


def progress_lines(err: str) -> list[str]:
    """The progress lines, their clocks left out."""
    return [line.replace(" (0 s)", "") for line in err.splitlines()]


def test_evaluations_the_budget_kept_from_starting_are_not_counted_as_done(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with StageProgress(6, rescore=False) as progress:
        stage_events(progress, "SUCCESS", 3)
        stage_events(progress, "NOT_RUN", 3)  # as evaluation.py reports an evaluation the budget kept from starting
    lines = progress_lines(capsys.readouterr().err)
    assert lines[-3:] == [
        "sandboxes ready: 3/6; 3 not run: budget spent",
        "agents done: 3/6; 3 not run: budget spent",
        "scored: 3/6; 3 not run: budget spent",
    ]
    assert not any("6/6" in line for line in lines)


def test_a_stage_left_unsettled_gets_a_last_line_with_its_count(capsys: pytest.CaptureFixture[str]) -> None:
    """A sequential A/B that stopped early never starts its later batches: the lines end on what ran."""
    with StageProgress(8, rescore=False) as progress:
        stage_events(progress, "SUCCESS", 2)  # the first line of each stage at once, the second within 5 s
    assert progress_lines(capsys.readouterr().err)[-3:] == ["sandboxes ready: 2/8", "agents done: 2/8", "scored: 2/8"]
