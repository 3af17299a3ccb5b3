"""What the Dagster layer shows of a comparison: float metadata to plot, and the regression verdict
(``no_significant_regression``, checked on every variant_comparison materialization).

Plain values only (no dagster import): the assets wrap them in metadata.
The task-set check and the verdict read the runs' outcomes, not pandas
frames: a run of one variant with an earlier run imports neither pandas
nor scipy (about 1 s of its end: docs/performance.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import NO_PREVIOUS_RUN
from .analysis import Arm, Comparison, paired_flips, shared_variants
from .render import markdown_table, summary_table
from .rows import RunRows


def comparison_table(comparison: Comparison) -> str:
    """The variant_comparison asset's Markdown table."""
    return markdown_table(summary_table(comparison)) if comparison.pairs else "one variant: nothing to pair"


def same_task_set(first: RunRows, second: RunRows) -> bool:
    """Two runs of the same row-tasks under the same variants: the regression check's "same task set"."""
    keys = [{(o.variant_id, o.task_id) for o in run.outcomes} for run in (first, second)]
    return keys[0] == keys[1]


@dataclass
class RegressionVerdict:
    passed: bool
    previous_run: str | None
    details: dict[str, Any] = field(default_factory=dict)


def regression_verdict(previous: RunRows | None, current: RunRows) -> RegressionVerdict:
    """This run against the previous run of the same task set, variant by variant, with the flipped rows.

    A variant regressed where its pair's verdict (``compare``'s, the same
    rule) is ``baseline_better``.
    """
    if previous is None:
        return RegressionVerdict(True, None, {"previous_run": NO_PREVIOUS_RUN})
    pairs = {v: paired_flips(Arm(previous, v, v), Arm(current, v, v)) for v in shared_variants(previous, current)}
    details: dict[str, Any] = {"previous_run": previous.run_id}
    for variant, pair in pairs.items():
        details[f"{variant}.difference"] = pair.difference  # None: no row paired (one side all ERROR)
        details[f"{variant}.mcnemar_p"] = float(pair.mcnemar_p)
        details[f"{variant}.regressed_rows"] = "\n".join(pair.regressions) or "none"
        details[f"{variant}.improved_rows"] = "\n".join(pair.improvements) or "none"
        details[f"{variant}.verdict"] = pair.verdict.reading
    passed = not any(pair.verdict.reading == "baseline_better" for pair in pairs.values())
    return RegressionVerdict(passed, previous.run_id, details)
