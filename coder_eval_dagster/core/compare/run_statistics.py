"""What a run records of its replicates (pass@k, flakiness) and sequential A/B, and what its loop asks.

The functions the run summary calls:

- ``replicate_summary``: run.json's ``pass_at_k``, ``pass_hat_k`` and ``flaky_rows``.
- ``flaky_share``: the figure the experiment's ``max_flaky_share`` gate reads.
- ``sequential_status``: after a batch, the sequential A/B's decision for the
  baseline against each other variant, and whether the run may stop.
- ``sequential_block``: run.json's ``sequential`` object.
- ``run_md_lines``: run.md's lines for all of the above.

They take EvaluationResults and plain JSON values (run.md is re-rendered from
run.json alone). numpy only: the run's summary imports this module, and
pandas or scipy would cost it a second.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..models.results import EvaluationResult
from .replicates import RowReplicates, flaky_rows, pass_k_figures
from .rows import ERROR
from .sequential import ALPHA, SequentialResult, sequential_decision

# ----------------------------------------------------------------------------- repeated trials


def row_replicates(results: Iterable[EvaluationResult]) -> list[RowReplicates]:
    """Every (variant, row-task) with a non-ERROR evaluation, in the order first seen."""
    counts: dict[tuple[str, str], list[int]] = {}
    for result in results:
        if result.final_status != ERROR:
            count = counts.setdefault((result.variant_id, result.task_id), [0, 0])
            count[0] += int(result.success)
            count[1] += 1
    return [RowReplicates(task_id, variant, passes, n) for (variant, task_id), (passes, n) in counts.items()]


def replicate_summary(results: Iterable[EvaluationResult]) -> dict[str, Any]:
    """run.json's ``pass_at_k`` and ``pass_hat_k`` (variant -> k as a string -> mean) and ``flaky_rows``.

    Plain JSON values. pass@1 = pass^1 = the mean of the rows' success rates;
    a row counts at k only with at least k non-ERROR replicates.
    """
    results = list(results)
    rows = row_replicates(results)
    by_variant: dict[str, list[RowReplicates]] = {
        variant: [] for variant in dict.fromkeys(r.variant_id for r in results)
    }
    for row in rows:
        by_variant[row.variant_id].append(row)
    figures = {  # a variant whose every row was an ERROR has no figure, but is there: a reader indexes by variant
        variant: pass_k_figures(np.array([r.passes for r in group]), np.array([r.replicates for r in group]))
        if group
        else []
        for variant, group in by_variant.items()
    }
    return {
        "pass_at_k": {variant: {str(f.k): f.pass_at_k for f in fs} for variant, fs in figures.items()},
        "pass_hat_k": {variant: {str(f.k): f.pass_hat_k for f in fs} for variant, fs in figures.items()},
        "flaky_rows": [asdict(row) for row in flaky_rows(rows)],
    }


def flaky_share(results: Iterable[EvaluationResult]) -> float | None:
    """The share of flaky rows among the rows that could show it (two or more non-ERROR replicates), all variants.

    A row with one replicate cannot disagree with itself: counting it would
    let a run with few repeats dilute the share. None when no row has two
    replicates (``repeats: 1``): the gate has nothing to read and passes.
    """
    checked = [row for row in row_replicates(results) if row.replicates >= 2]
    return sum(row.flaky for row in checked) / len(checked) if checked else None


# ----------------------------------------------------------------------------- the sequential A/B


@dataclass(frozen=True)
class PairDecision:
    """The sequential decision for one other variant against the baseline."""

    baseline: str
    other: str
    result: SequentialResult


@dataclass(frozen=True)
class SequentialStatus:
    """The sequential A/B after a batch: one decision per other variant; the run stops when every one is decisive."""

    alpha: float
    margin: float | None
    through_batch: int
    comparisons: list[PairDecision]

    @property
    def decisive(self) -> bool:
        """Every comparison has a decision: no new row need start."""
        return bool(self.comparisons) and all(c.result.decision != "undecided" for c in self.comparisons)


def paired_differences(
    rows: Sequence[RowReplicates], batch_of: Mapping[str, int], baseline: str, other: str, through_batch: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per paired row, other's success rate minus the baseline's, and its batch; in batch order, then by row-task.

    A row pairs where both variants have a non-ERROR replicate, as in
    ``coder-eval compare``. Rows of batches after ``through_batch`` are left
    out: a batch still running holds the rows that finished first, and how
    fast a row finishes may depend on whether it passes.
    """
    rates = {(row.variant_id, row.task_id): row.passes / row.replicates for row in rows}
    missing = sorted({task for _, task in rates} - set(batch_of))
    if missing:
        raise ValueError(f"rows without a batch number: {', '.join(missing[:5])}")
    paired = sorted(
        (batch_of[task], task, rate - rates[(baseline, task)])
        for (variant, task), rate in rates.items()
        if variant == other and (baseline, task) in rates and batch_of[task] <= through_batch
    )
    return np.array([d for _, _, d in paired], dtype=float), np.array([b for b, _, _ in paired], dtype=int)


def sequential_status(
    results: Iterable[EvaluationResult],
    batch_of: Mapping[str, int],
    variants: Sequence[str],
    through_batch: int,
    alpha: float = ALPHA,
    margin: float | None = None,
) -> SequentialStatus:
    """The decision after batch ``through_batch`` for ``variants[0]`` (the baseline) against each other variant.

    ``results`` are the run's evaluations so far (any order; ERROR ones are
    left out), ``batch_of`` maps every planned row-task id to its batch
    number (``plan_batches``). Call it once a batch's rows have all finished;
    ``decisive`` says no new row need start.
    """
    if len(variants) < 2:
        raise ValueError("a sequential A/B needs a baseline and at least one other variant")
    rows = row_replicates(results)
    baseline = variants[0]
    comparisons = []
    for other in variants[1:]:
        differences, batches = paired_differences(rows, batch_of, baseline, other, through_batch)
        comparisons.append(PairDecision(baseline, other, sequential_decision(differences, batches, alpha, margin)))
    return SequentialStatus(alpha, margin, through_batch, comparisons)


def _interval(result: SequentialResult) -> dict[str, float]:
    return {"low": result.interval.low, "high": result.interval.high}


def sequential_block(
    status: SequentialStatus, rows_run: int, rows_total: int, stopped_at_batch: int | None
) -> dict[str, Any]:
    """run.json's ``sequential``: the issue's fields for the first other variant, and every comparison beside them.

    ``decision`` and ``interval`` are the baseline against the experiment's
    second variant (the A/B); ``comparisons`` holds each other variant's.
    ``stopped_at_batch`` is the batch after which no new row started (None:
    the run went to the end); ``margin`` is kept so that ``compare`` reads the
    run's sequence as the run did.
    """
    first = status.comparisons[0].result
    return {
        "decision": first.decision,
        "rows_run": rows_run,
        "rows_total": rows_total,
        "alpha": status.alpha,
        "margin": status.margin,
        "stopped_at_batch": stopped_at_batch,
        "interval": _interval(first),
        "comparisons": [
            {
                "baseline": c.baseline,
                "other": c.other,
                "decision": c.result.decision,
                "decided_at_batch": c.result.decided_at_batch,
                "rows": c.result.rows,
                "interval": _interval(c.result),
            }
            for c in status.comparisons
        ],
    }


# ----------------------------------------------------------------------------- run.md


def _percent(value: float) -> str:
    return f"{value:.1%}"


def repeated_trials_lines(
    pass_at_k: Mapping[str, Mapping[str, float]],
    pass_hat_k: Mapping[str, Mapping[str, float]],
    flaky: Sequence[Mapping[str, Any]],
) -> list[str]:
    """run.md's pass@k / pass^k table and flaky rows; nothing when no row was repeated (k = 1 only, no flaky row)."""
    if all(list(figures) in (["1"], []) for figures in pass_at_k.values()) and not flaky:
        return []
    lines = ["", "## Repeated trials", "", "| variant | k | pass@k | pass^k |", "|---|---|---|---|"]
    for variant, figures in pass_at_k.items():
        hat = pass_hat_k[variant]
        lines += [f"| {variant} | {k} | {_percent(at)} | {_percent(hat[k])} |" for k, at in figures.items()]
    lines += ["", f"Flaky rows (replicates that disagree): {len(flaky)}", ""]
    lines += [f"- {r['task_id']} [{r['variant_id']}]: {r['passes']} of {r['replicates']} passed" for r in flaky]
    return lines


def sequential_lines(block: Mapping[str, Any] | None) -> list[str]:
    """run.md's sequential A/B: each comparison's decision and interval, the rows run and where the run stopped."""
    if not block:
        return []
    stopped = block["stopped_at_batch"]
    margin = "" if block.get("margin") is None else f", equivalence margin {block['margin'] * 100:.1f} pp"
    lines = [
        "",
        "## Sequential A/B",
        "",
        f"{block['rows_run']} of {block['rows_total']} rows run (alpha {block['alpha']:g}{margin}); "
        + ("ran to the end." if stopped is None else f"no new row started after batch {stopped}.")
        + (
            f" {beyond} rows beyond `max_rows` were never planned."
            if (beyond := block.get("rows_beyond_max_rows"))
            else ""
        ),
        "",
    ]
    for c in block.get("comparisons", []):
        low, high = c["interval"]["low"] * 100, c["interval"]["high"] * 100
        reached = "" if c["decided_at_batch"] is None else f" (after batch {c['decided_at_batch']})"
        lines.append(
            f"- {c['other']} vs {c['baseline']}: {c['decision']}{reached}; "
            f"difference in success within [{low:+.1f}, {high:+.1f}] pp over {c['rows']} paired rows"
        )
    return lines


def run_md_lines(summary: Mapping[str, Any]) -> list[str]:
    """run.md's sections of a run.json document: repeated trials, then the sequential A/B; each only if present."""
    lines: list[str] = []
    if summary.get("pass_at_k"):
        lines += repeated_trials_lines(summary["pass_at_k"], summary["pass_hat_k"], summary.get("flaky_rows") or [])
    return lines + sequential_lines(summary.get("sequential"))
