"""The comparison and history figures (matplotlib, Agg backend): SVG for the HTML pages, PNG beside them.

matplotlib is imported here only, and only by the commands that draw, so
``coder-eval run`` does not pay for it at start-up.
"""

from __future__ import annotations

import io
import os
import re
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from .analysis import ArmSummary, PairComparison

FOREST_TASKS = 40  # the tasks with the largest differences; a longer forest is unreadable


@dataclass
class Drawing:
    """A figure, drawn: its name (the PNG's stem), its title and its inline SVG."""

    name: str
    title: str
    svg: str
    figure: Any


def _new_figure(width: float, height: float) -> Figure:
    os.environ.setdefault("MPLBACKEND", "Agg")
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    return Figure(figsize=(width, height), layout="constrained")


def _drawing(name: str, title: str, figure: Figure) -> Drawing:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})  # no timestamp: the same data, the same file
    svg = buffer.getvalue()
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg[svg.index("<svg") :], flags=re.DOTALL)  # RDF credits
    return Drawing(name, title, svg, figure)


def save_pngs(drawings: list[Drawing], folder: Path, prefix: str) -> dict[str, Path]:
    """Each drawing as ``<folder>/<prefix><name>.png``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for drawing in drawings:
        path = folder / f"{prefix}{drawing.name}.png"
        drawing.figure.savefig(path, format="png", dpi=100, metadata={"Software": None})
        paths[drawing.name] = path
    return paths


def _no_rate(arm: ArmSummary) -> str:
    """Why an arm has no success rate: every evaluation ended in ERROR, or it has none."""
    return "all ERROR" if arm.evaluations else "no evaluation"


def success_rate_figure(arms: list[ArmSummary]) -> Drawing:
    """Success rate per arm with its Wilson 95 % interval; an arm without a rate keeps its place, saying why.

    A variant whose every evaluation ended in ERROR has no rate; left out, it
    would vanish from the figure that is meant to show a broken variant.
    """
    figure = _new_figure(max(4.0, 1.2 * len(arms) + 2), 3.2)
    axes = figure.add_subplot()
    # An arm has a rate exactly when it has valid evaluations, and then its interval too.
    for x, arm in enumerate(arms):
        if arm.success_rate is None or arm.interval is None:
            axes.text(x, 0.02, _no_rate(arm), ha="center", va="bottom", color="#cf222e")
            continue
        below, above = arm.success_rate - arm.interval.low, arm.interval.high - arm.success_rate
        axes.bar([x], [arm.success_rate], yerr=[[below], [above]], capsize=6, color="#4c78a8")
    axes.set_xticks(range(len(arms)), [arm.label for arm in arms], rotation=15, ha="right")
    axes.set_xlim(-0.6, len(arms) - 0.4)
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("success rate (Wilson 95 %)")
    return _drawing("success_rate", "Success rate per variant", figure)


LABEL_INCHES_PER_CHAR = 0.08  # a tick label's character at the default 10 pt
LABEL_MARGIN_INCHES = 0.1  # between the axis's label and the figure's edge


def _widen_to_hold(figure: Figure, label: Text) -> None:
    """Widen ``figure`` until the axis ``label`` lies inside it, as measured once laid out.

    The label is centred under the axes, which the tick labels push right: a
    label naming two arms of timestamped runs ran past the right edge. Widening
    the figure by w widens the axes by w and moves their centre w / 2, so an
    overflow of o (on either side) takes 2 o more.
    """
    figure.draw_without_rendering()  # the constrained layout, and the text measured, as a save lays them out
    box = label.get_window_extent()
    overflow = max(-box.x0, box.x1 - figure.bbox.width) / figure.dpi
    if overflow > -LABEL_MARGIN_INCHES:
        width, height = figure.get_size_inches()
        figure.set_size_inches(width + 2 * (overflow + LABEL_MARGIN_INCHES), height)


def forest_figure(pair: PairComparison, index: int) -> Drawing:
    """Per base task: the difference in success rate (other - baseline) with its paired bootstrap interval."""
    groups = sorted(pair.by_task, key=lambda g: -abs(g.difference or 0.0))[:FOREST_TASKS]
    groups.reverse()
    labels = [f"{g.key} (n={g.rows})" for g in groups]
    # wide enough for the longest label beside a plot of ~3.5 in (a 100-character id collapsed the plot to nothing)
    longest = max(map(len, labels), default=0)
    figure = _new_figure(max(6.5, 3.5 + LABEL_INCHES_PER_CHAR * longest), max(2.0, 0.3 * len(groups) + 1.2))
    axes = figure.add_subplot()
    for y, group in enumerate(groups):
        if group.interval is not None:
            axes.plot([group.interval.low, group.interval.high], [y, y], color="#555555")
        if group.difference is not None:  # None only for a group of no rows
            axes.plot([group.difference], [y], "o", color="#e45756" if group.difference < 0 else "#54a24b")
    axes.axvline(0, color="#999999", linewidth=1)
    axes.set_yticks(range(len(groups)), labels)
    axes.set_xlim(-1.05, 1.05)
    axes.set_xlabel(f"difference in success rate: {pair.other} - {pair.baseline}")
    _widen_to_hold(figure, axes.xaxis.label)
    return _drawing(f"forest_{index}", f"Per-task difference: {pair.other} vs {pair.baseline}", figure)


# One shape per arm: with its colour, it tells arms apart even where their points coincide.
MARKERS = "osD^vP*Xph"
MARKER_SIZE, RING_STEP = 8.0, 5.0


def cost_success_figure(arms: list[ArmSummary]) -> Drawing:
    """Mean cost per evaluation against success rate, one hollow point per arm, named in a legend beside the axes.

    Names written at the points would lie on top of each other when two arms
    share a point (the same success rate at no reported cost is common); in a
    legend they never overlap. Arms on one point are drawn as concentric rings,
    the first largest, so each stays visible.
    """
    figure = _new_figure(6.5, 3.2)
    axes = figure.add_subplot()
    points = [(arm.label, arm.mean_cost_usd or 0.0, arm.success_rate) for arm in arms if arm.success_rate is not None]
    sharing = Counter((cost, rate) for _, cost, rate in points)
    drawn: Counter[tuple[float, float]] = Counter()
    for index, (label, cost, rate) in enumerate(points):
        rings_inside = sharing[(cost, rate)] - 1 - drawn[(cost, rate)]
        drawn[(cost, rate)] += 1
        axes.plot(
            [cost],
            [rate],
            linestyle="none",
            marker=MARKERS[index % len(MARKERS)],
            markersize=MARKER_SIZE + RING_STEP * rings_inside,
            markerfacecolor="none",
            markeredgewidth=1.8,
            label=label,
        )
    axes.set_ylim(0, 1.05)
    axes.set_xlabel("mean cost per evaluation (USD; 0 when not reported)")
    axes.set_ylabel("success rate")
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    axes.xaxis.set_major_locator(MaxNLocator(nbins=4))  # long cost labels side by side would run together
    if points:
        legend = axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)
        for handle in legend.legend_handles:  # one size in the legend, whatever the ring
            if isinstance(handle, Line2D):
                handle.set_markersize(MARKER_SIZE)
    return _drawing("cost_success", "Cost vs success per variant", figure)


def comparison_figures(arms: list[ArmSummary], pairs: list[PairComparison]) -> list[Drawing]:
    return [
        success_rate_figure(arms),
        *(forest_figure(pair, i) for i, pair in enumerate(pairs, start=1) if pair.by_task),
        cost_success_figure(arms),
    ]


def pass_rate_over_time_figure(series: dict[str, list[tuple[Any, float]]]) -> Drawing:
    """Pass rate per variant per day (``series``: variant -> [(day, rate)])."""
    figure = _new_figure(6.5, 3.2)
    axes = figure.add_subplot()
    for variant, points in sorted(series.items()):
        axes.plot([day for day, _ in points], [rate for _, rate in points], "o-", label=variant)
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

    days = sorted({day for points in series.values() for day, _ in points})
    if len(days) == 1:  # one day has no range to put ticks on: show the days around it
        axes.set_xlim(days[0] - timedelta(days=1), days[0] + timedelta(days=1))
    locator = AutoDateLocator(maxticks=8)  # type: ignore[no-untyped-call]  # matplotlib.dates has no annotations
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]  # as above
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("pass rate (ERROR excluded)")
    if series:
        axes.legend(loc="lower left")
    return _drawing("pass_rate_over_time", "Pass rate over time", figure)
