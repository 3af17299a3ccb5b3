"""The comparison page's cost-vs-success figure stays readable when arms share a point: no two names overlap."""

from __future__ import annotations

from itertools import combinations

from matplotlib.backends.backend_agg import FigureCanvasAgg

from coder_eval_dagster.core.compare.analysis import ArmSummary
from coder_eval_dagster.core.compare.figures import cost_success_figure


def arm(label: str, rate: float | None, cost: float | None) -> ArmSummary:
    return ArmSummary(
        label=label, run_id="r", variant_id=label, evaluations=10, errors=0, successes=0, success_rate=rate,
        interval=None, mean_score=rate, mean_cost_usd=cost, success_clustered=None, score_clustered=None,
        max_replicates=1, pass_k=[], pass_k_by_task=[],
    )  # fmt: skip


def test_names_never_overlap_and_every_arm_stays_visible() -> None:
    arms = [
        arm("baseline", 0.6, None),  # no cost reported: drawn at 0, where the next two are too
        arm("with-hint", 0.6, 0.0),
        arm("with-a-much-longer-variant-name", 0.6, None),
        arm("bigger-model", 0.8, 0.02),
        arm("never-valid", None, None),  # no rate: not drawn
    ]
    figure = cost_success_figure(arms).figure
    axes = figure.axes[0]
    canvas = FigureCanvasAgg(figure)
    canvas.draw()  # laid out as the saved figure is
    renderer = canvas.get_renderer()
    legend = axes.get_legend()
    names = [text.get_text() for text in legend.get_texts()]
    assert names == ["baseline", "with-hint", "with-a-much-longer-variant-name", "bigger-model"]
    boxes = [text.get_window_extent(renderer) for text in legend.get_texts()]
    assert not any(a.overlaps(b) for a, b in combinations(boxes, 2))
    assert len(axes.texts) == 0  # nothing written at the points, where names collided
    ticks = [label.get_window_extent(renderer) for label in axes.get_xticklabels() if label.get_text()]
    assert not any(a.overlaps(b) for a, b in combinations(ticks, 2))
    sizes = [line.get_markersize() for line in axes.get_lines()[:3]]  # the three arms at (0, 0.6)
    assert len(set(sizes)) == 3 and all(line.get_markerfacecolor() == "none" for line in axes.get_lines())
