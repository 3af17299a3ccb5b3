"""The comparison's figures as they are saved, measured with matplotlib's own renderer, and the verdict's reason."""

from __future__ import annotations

import io
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from coder_eval_dagster.core.compare.analysis import ArmSummary, compare_runs
from coder_eval_dagster.core.compare.figures import forest_figure, success_rate_figure
from coder_eval_dagster.core.compare.interval import Interval
from coder_eval_dagster.core.compare.render import render_markdown
from coder_eval_dagster.core.compare.rows import read_run_rows

from ..support.synthetic_runs import evaluation, write_run
from .test_compare_verdicts import run_of
from .test_cost_success_figure import arm

LONG_TASK = "a-rather-long-task-name-" * 3


@pytest.mark.parametrize(("variant", "task"), [("B", LONG_TASK), ("W" * 52, "t"), ("W" * 52, LONG_TASK)])
def test_the_forest_plots_axis_label_lies_inside_the_figure(tmp_path: Path, variant: str, task: str) -> None:
    """Centred under axes pushed right by the tick labels, a label naming two timestamped arms ran past the edge."""
    rows = {
        status: [evaluation(variant, f"{task}/r{i}", status) for i in range(3)] for status in ("SUCCESS", "FAILURE")
    }
    before = read_run_rows(write_run(tmp_path, datetime(2026, 12, 7, 15, 19, 3, tzinfo=UTC), rows["SUCCESS"]))
    after = read_run_rows(write_run(tmp_path, datetime(2026, 12, 7, 15, 20, 11, tzinfo=UTC), rows["FAILURE"]))
    (pair,) = compare_runs(before, after).pairs
    figure = forest_figure(pair, 1).figure
    label = figure.axes[0].xaxis.label
    assert label.get_text().endswith(f"{variant}@2026-12-07T15-19-03Z")
    for form in ("svg", "png"):  # the page's inline SVG, the PNG beside it: each laid out as it is saved
        figure.savefig(io.BytesIO(), format=form, dpi=100)
        box = label.get_window_extent(FigureCanvasAgg(figure).get_renderer())
        assert box.x0 >= 0 and box.x1 <= figure.bbox.width, (form, box, figure.bbox)


def rated(label: str, rate: float) -> ArmSummary:
    return replace(arm(label, rate, None), interval=Interval(rate / 2, (1 + rate) / 2))


def test_an_arm_all_error_keeps_its_tick_and_says_so() -> None:
    """A variant whose evaluations all ended in ERROR has no rate: it lost its bar, its tick and its name."""
    arms = [rated("A", 0.5), replace(arm("E", None, None), errors=10), rated("C", 1.0)]
    axes = success_rate_figure(arms).figure.axes[0]
    assert [tick.get_text() for tick in axes.get_xticklabels()] == ["A", "E", "C"]
    (said,) = axes.texts
    assert said.get_text() == "all ERROR" and said.get_position()[0] == 1  # where E's bar would stand
    assert sorted(round(bar.get_x() + bar.get_width() / 2) for bar in axes.patches) == [0, 2]


@pytest.mark.parametrize(
    ("tasks", "reason"),
    [
        ({"a/r0": ("S", "F"), "b/r0": ("F", "S"), "c/r0": ("F", "S")}, "no base task has more than one row"),
        ({"t/r0": ("S", "F"), "t/r1": ("F", "S"), "t/r2": ("F", "S")}, "one base task only"),
        (
            {"a/r0": ("F", "S"), "a/r1": ("F", "F"), "b/r0": ("F", "S"), "b/r1": ("F", "F")},
            "a clustered interval of no width",
        ),
    ],
)
def test_the_verdict_gives_the_one_reason_it_read_the_bootstrap(
    tmp_path: Path, tasks: dict[str, tuple[str, str]], reason: str
) -> None:
    before = run_of(tmp_path, {"v": {task: outcome[0] for task, outcome in tasks.items()}}, day=1)
    after = run_of(tmp_path, {"v": {task: outcome[1] for task, outcome in tasks.items()}}, day=2)
    comparison = compare_runs(before, after)
    assert comparison.pairs[0].verdict.uses == "bootstrap"
    (verdict,) = [line for line in render_markdown(comparison).splitlines() if line.startswith("Verdict:")]
    assert f"the paired bootstrap interval ({reason}) [" in verdict, verdict
    others = {"no base task has more than one row", "one base task only", "a clustered interval of no width"}
    assert not any(other in verdict for other in others - {reason}), verdict
