"""A comparison as a terminal table, Markdown, JSON or a self-contained HTML page.

Every format shows the same blocks (built once by ``blocks``): the arms,
the repeated trials (pass@k, pass^k, flaky rows), then per pair of arms the
paired figures with their clustered intervals and verdict, the sequential
A/B's batches (a run that ran in batches), the telemetry deltas, the flips
both ways with links to each task.html, the ERROR rows, and the per-task and
per-tag breakdowns.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .analysis import Comparison, Flip, GroupStats, PairComparison, SequentialView, Verdict, clustered_unread
from .clustered import MeanEstimate
from .figures import Drawing
from .interval import Interval
from .replicates import PassK
from .webpage import html_page, relative_to


@dataclass(frozen=True)
class Link:
    text: str
    target: str  # a file path


Cell = str | Link


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Cell]]
    title: str = ""


@dataclass
class Block:
    heading: str
    notes: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def signed_points(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:+.1f} pp"


def interval_text(interval: Interval | None, scale: float = 100.0, unit: str = " pp") -> str:
    """Percentage points to a tenth; a score difference (``scale`` 1) to four figures, as its estimate is shown
    (to a tenth, a 0.025 difference read [+0.0, +0.0])."""
    if interval is None:
        return "–"
    shape = "+.1f" if scale == 100.0 else "+.4g"
    return f"[{interval.low * scale:{shape}}, {interval.high * scale:{shape}}]{unit}"


def rate_interval(interval: Interval | None) -> str:
    return "–" if interval is None else f"[{interval.low:.1%}, {interval.high:.1%}]"


def number(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


def p_value(value: float) -> str:
    return f"{value:.4g}"


def clustered_interval(estimate: MeanEstimate | None, scale: float = 100.0, unit: str = " pp") -> str:
    return interval_text(estimate.interval_clustered if estimate else None, scale, unit)


def verdict_text(verdict: Verdict) -> str:
    return f"{verdict.reading.replace('_', ' ')} ({verdict.uses})"


# ----------------------------------------------------------------------------- the blocks


def summary_table(comparison: Comparison) -> Table:
    """One line per pair of arms: the headline figures (also the asset's Markdown metadata)."""
    return Table(
        [
            "baseline",
            "other",
            "rows",
            "baseline rate (mean of rows)",
            "other rate (mean of rows)",
            "difference",
            "95 % CI",
            "clustered 95 % CI",
            "verdict",
            "McNemar p",
            "regressions",
            "improvements",
            "ERROR rows",
        ],
        [
            [
                p.baseline,
                p.other,
                str(p.rows),
                percent(p.rate_baseline),
                percent(p.rate_other),
                signed_points(p.difference),
                interval_text(p.difference_interval),
                clustered_interval(p.difference_clustered),
                verdict_text(p.verdict),
                p_value(p.mcnemar_p),
                str(len(p.regressions)),
                str(len(p.improvements)),
                str(len(p.error_rows)),
            ]
            for p in comparison.pairs
        ],
    )


def _arms_table(comparison: Comparison) -> Table:
    return Table(
        [
            "arm",
            "evaluations",
            "ERROR",
            "successes",
            "success rate (of evaluations)",
            "Wilson 95 %",
            "clustered 95 %",
            "base tasks",
            "mean score",
            "clustered 95 %",
            "mean cost (USD)",
        ],
        [
            [
                a.label,
                str(a.evaluations),
                str(a.errors),
                str(a.successes),
                percent(a.success_rate),
                rate_interval(a.interval),
                rate_interval(a.success_clustered.interval_clustered if a.success_clustered else None),
                str(a.success_clustered.clusters if a.success_clustered else 0),
                number(a.mean_score),
                clustered_interval(a.score_clustered, 1.0, ""),
                number(a.mean_cost_usd),
            ]
            for a in comparison.arms
        ],
        "Each arm on all its rows (ERROR evaluations excluded; clustered: standard errors clustered by base task)",
    )


def _pass_k_cells(figure: PassK) -> list[Cell]:
    """One k's cells; the rows left out say how far the figure's rows fall short of the arm's."""
    return [
        str(figure.k),
        str(figure.rows),
        str(figure.rows_left_out),
        percent(figure.pass_at_k),
        rate_interval(figure.pass_at_k_interval),
        percent(figure.pass_hat_k),
        rate_interval(figure.pass_hat_k_interval),
    ]


PASS_K_HEADERS = ["k", "rows", "rows with fewer replicates", "pass@k", "95 % CI", "pass^k", "95 % CI"]


def _repeated_trials_block(comparison: Comparison) -> Block:
    """pass@k and pass^k per arm (and per base task when a row was repeated), then the flaky rows.

    The per-task table is left out with one replicate: pass@1 per task is the
    breakdown's success rate already.
    """
    arms = comparison.arms
    tables = [
        Table(
            ["arm", *PASS_K_HEADERS],
            [[a.label, *_pass_k_cells(f)] for a in arms for f in a.pass_k],
            "pass@k (any of k replicates passes) and pass^k (all k pass), per arm",
        )
    ]
    if any(a.max_replicates > 1 for a in arms):
        tables.append(
            Table(
                ["arm", "base task", *PASS_K_HEADERS],
                [
                    [a.label, t.base_task_id, *_pass_k_cells(f)]
                    for a in arms
                    for t in a.pass_k_by_task
                    for f in t.pass_k
                ],
                "pass@k and pass^k per base task",
            )
        )
    tables.append(
        Table(
            ["run", "variant", "row", "passes", "replicates"],
            [[r.run_id, r.variant_id, r.task_id, str(r.passes), str(r.replicates)] for r in comparison.flaky_rows],
            f"Flaky rows: replicates that disagree ({len(comparison.flaky_rows)})",
        )
    )
    notes = [
        "Over each row's non-ERROR replicates: pass@k is the unbiased estimator 1 - C(n-c, k) / C(n, k) "
        "(Chen et al. 2021), pass^k is C(c, k) / C(n, k) (tau-bench), averaged over the rows with at least k "
        "replicates; pass@1 = pass^1 = the mean success rate of the rows. Intervals: bootstrap of the rows.",
        f"Most replicates of a row: {max((a.max_replicates for a in arms), default=0)}.",
    ]
    return Block("Repeated trials", notes, tables)


def _flips_table(title: str, flips: list[Flip], pair: PairComparison) -> Table:
    return Table(
        ["row", f"score {pair.baseline}", f"score {pair.other}", "report", "report"],
        [
            [
                f.task_id,
                f"{f.score_baseline:.3f}",
                f"{f.score_other:.3f}",
                Link("baseline", f.report_baseline),
                Link("other", f.report_other),
            ]
            for f in flips
        ],
        f"{title} ({len(flips)})",
    )


def _groups_table(title: str, groups: list[GroupStats], pair: PairComparison) -> Table:
    return Table(
        [
            "group",
            "rows",
            f"{pair.baseline} rate (mean of rows)",
            f"{pair.other} rate (mean of rows)",
            "difference",
            "95 % CI",
            "regressions",
            "improvements",
            "p",
        ],
        [
            [
                g.key,
                str(g.rows),
                percent(g.rate_baseline),
                percent(g.rate_other),
                signed_points(g.difference),
                interval_text(g.interval),
                str(g.regressions),
                str(g.improvements),
                p_value(g.mcnemar_p),
            ]
            for g in groups
        ],
        title,
    )


def _t_interval_text(interval: Interval | None, groups: int) -> str:
    """An interval read through Student's t, with its degrees of freedom; "–" under two groups (t has no df 0)."""
    return "–" if interval is None else f"{interval_text(interval)} (t, df {groups - 1})"


def _clustered_note(pair: PairComparison) -> str:
    """Both standard errors side by side: how much clustering widened the interval."""
    estimate = pair.difference_clustered
    if estimate is None:
        return "No paired rows: no clustered interval."
    tasks = f"{estimate.clusters} base task" + "s" * (estimate.clusters != 1)
    unclustered = _t_interval_text(estimate.interval, estimate.observations)
    head = f"Clustered by base task ({tasks}, {estimate.observations} rows): "
    if estimate.interval_clustered is None:
        return head + (
            "no clustered interval can be made from one base task (nothing varies between tasks); SE of the "
            f"difference {number(estimate.se)} unclustered, 95 % CI {unclustered} unclustered."
        )
    return head + (
        f"SE of the difference {number(estimate.se_clustered)} clustered vs {number(estimate.se)} unclustered; "
        f"95 % CI {_t_interval_text(estimate.interval_clustered, estimate.clusters)} clustered vs {unclustered} "
        "unclustered."
    )


def _verdict_source(pair: PairComparison) -> str:
    """The interval the verdict read, and why that one: the reason that applied, not every possible one."""
    if pair.verdict.uses == "clustered":
        return "the clustered interval (some base task has more than one row)"
    return f"the paired bootstrap interval ({clustered_unread(pair.difference_clustered)})"


def _verdict_note(pair: PairComparison) -> str:
    """The verdict, what it read, and the rule: a winner needs the exact test and the interval on one side."""
    verdict, p = pair.verdict, p_value(pair.mcnemar_p)
    reading = verdict.reading.replace("_", " ")
    if verdict.interval is None:
        why = (
            "no row is paired (each variant's rows ERROR or missing in the other)"
            if pair.rows == 0
            else "no interval has any width, every paired row having the same difference"
        )
        return f"Verdict: {reading}, from McNemar's exact p = {p} alone (a winner needs p below 0.05): {why}."
    source = f"{_verdict_source(pair)} {interval_text(verdict.interval)}"
    return (
        f"Verdict: {reading}, from {source} and McNemar's exact p = {p}: a winner needs p below 0.05 and the "
        "interval on the same side of 0."
    )


def _sequential_table(view: SequentialView) -> Table:
    """The sequence after each batch: how it narrowed, and when it first excluded 0 (or fit the margin)."""
    return Table(
        ["batch", "rows", f"{(1 - view.alpha) * 100:g} % sequence", "decision"],
        [[str(s.batch), str(s.rows), interval_text(s.interval), s.decision] for s in view.steps],
        "Sequential A/B: the anytime-valid confidence sequence after each batch",
    )


def _sequential_note(view: SequentialView) -> str:
    """The decision in one line, with the batch that first reached it (where the run could have stopped)."""
    result = view.result
    margin = "" if view.margin is None else f", equivalence margin {view.margin * 100:.1f} pp"
    reached = "" if result.decided_at_batch is None else f", first reached after batch {result.decided_at_batch}"
    return (
        f"Sequential A/B (alpha {view.alpha:g}{margin}): {result.decision}{reached}; "
        f"{result.rows} paired rows in {result.batches} batches, interval {interval_text(result.interval)}."
    )


def _pair_block(pair: PairComparison) -> Block:
    errors = ", ".join(f"{label}: {count}" for label, count in pair.error_evaluations.items())
    notes = [
        f"{pair.rows} paired rows. Success rate, the mean of the rows' rates (a row's non-ERROR replicates "
        f"averaged): {pair.baseline} {percent(pair.rate_baseline)} {rate_interval(pair.interval_baseline)}, "
        f"{pair.other} {percent(pair.rate_other)} {rate_interval(pair.interval_other)} (Wilson 95 %, the rows as "
        f"trials); {pair.successes_baseline}/{pair.evaluations_baseline} and "
        f"{pair.successes_other}/{pair.evaluations_other} evaluations succeeded.",
        f"Difference ({pair.other} - {pair.baseline}): {signed_points(pair.difference)}, paired bootstrap 95 % CI "
        f"{interval_text(pair.difference_interval)}; McNemar exact p = {p_value(pair.mcnemar_p)} "
        f"({len(pair.regressions)} regressions, {len(pair.improvements)} improvements).",
        _clustered_note(pair),
        _verdict_note(pair),
        f"Mean weighted-score difference: {number(pair.score_difference)}, 95 % CI "
        f"{interval_text(pair.score_interval, 1.0, '')} (bootstrap), "
        f"{clustered_interval(pair.score_difference_clustered, 1.0, '')} (clustered).",
        f"ERROR evaluations (not in the paired figures): {errors}; {len(pair.error_rows)} row(s) left unpaired "
        f"by ERROR; {pair.unpaired_rows} row(s) in one arm only.",
    ]
    deltas = Table(
        ["metric", "rows", f"median {pair.baseline}", f"median {pair.other}", "median delta", "p90 delta"],
        [
            [
                d.metric,
                str(d.rows),
                number(d.median_baseline),
                number(d.median_other),
                number(d.median_delta),
                number(d.p90_delta),
            ]
            for d in pair.deltas
        ],
        "Telemetry on the paired rows (delta = other - baseline, per row)",
    )
    errors_table = Table(
        ["row", "ERROR in"], [[e.task_id, ", ".join(e.errored_in)] for e in pair.error_rows], "ERROR rows"
    )
    sequential = [] if pair.sequential is None else [_sequential_table(pair.sequential)]
    if pair.sequential is not None:
        notes.append(_sequential_note(pair.sequential))
    return Block(
        f"{pair.other} vs {pair.baseline}",
        notes,
        [
            *sequential,
            deltas,
            _flips_table("Regressions: passed in the baseline, failed in the other", pair.regressions, pair),
            _flips_table("Improvements: failed in the baseline, passed in the other", pair.improvements, pair),
            errors_table,
            _groups_table("Per base task", pair.by_task, pair),
            _groups_table("Per tag", pair.by_tag, pair),
        ],
    )


def _left_out_notes(comparison: Comparison) -> list[str]:
    """Two runs' variants that one run only ran, named with that run: a pair needs the variant in both."""
    left_out = comparison.variants_left_out
    if left_out is None:
        return []
    first, second = comparison.runs
    only = [f"{v} (in {first} only)" for v in left_out.first_run_only]
    only += [f"{v} (in {second} only)" for v in left_out.second_run_only]
    if not only:
        return []
    return [f"Variants left out, each in one run only (a pair needs the variant in both): {'; '.join(only)}."]


def blocks(comparison: Comparison) -> list[Block]:
    runs = ", ".join(comparison.runs)
    overview = Block(
        f"Comparison of {runs}",
        [
            f"Paired by row-task (replicates averaged); bootstrap: {comparison.resamples} resamples of the rows, "
            f"seed {comparison.seed}. ERROR evaluations are infrastructure failures and excluded. A pair's rates "
            "are means over its paired rows, so their difference is the difference shown; each arm's own rate "
            "is over all its evaluations but its ERRORs.",
            *_left_out_notes(comparison),
        ],
        [summary_table(comparison), _arms_table(comparison)],
    )
    return [overview, _repeated_trials_block(comparison), *(_pair_block(pair) for pair in comparison.pairs)]


# ----------------------------------------------------------------------------- formats


def _markdown_cell(cell: Cell, href: Callable[[str], str]) -> str:
    text = f"[{cell.text}]({href(cell.target)})" if isinstance(cell, Link) else cell
    return text.replace("|", "\\|")


def markdown_table(table: Table, href: Callable[[str], str] = str) -> str:
    lines = ["| " + " | ".join(table.headers) + " |", "|" + "---|" * len(table.headers)]
    lines += ["| " + " | ".join(_markdown_cell(c, href) for c in row) + " |" for row in table.rows]
    return "\n".join(lines) + "\n"


def markdown_of(sections: list[Block], folder: Path | None = None) -> str:
    href = relative_to(folder)
    parts = []
    for number_, block in enumerate(sections):
        parts.append(("# " if number_ == 0 else "## ") + block.heading + "\n")
        parts += [note + "\n" for note in block.notes]
        for table in block.tables:
            if table.title:
                parts.append(f"**{table.title}**\n")
            parts.append(markdown_table(table, href) if table.rows else "none\n")
    return "\n".join(parts)


def render_markdown(comparison: Comparison, folder: Path | None = None) -> str:
    return markdown_of(blocks(comparison), folder)


def _text_table(table: Table) -> str:
    cells = [[c.target if isinstance(c, Link) else c for c in row] for row in table.rows]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(table.headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(table.headers, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def text_of(sections: list[Block]) -> str:
    """Plain aligned text for a terminal."""
    parts = []
    for block in sections:
        parts.append(f"{block.heading}\n{'=' * len(block.heading)}\n")
        parts += [note + "\n" for note in block.notes]
        for table in block.tables:
            body = _text_table(table) if table.rows else "none\n"  # a section left empty still says so
            parts.append((f"{table.title}\n" if table.title else "") + body)
    return "\n".join(parts)


def render_table(comparison: Comparison) -> str:
    return text_of(blocks(comparison))


def render_json(comparison: Comparison) -> str:
    return json.dumps(comparison.to_json(), indent=2, ensure_ascii=False) + "\n"


# ----------------------------------------------------------------------------- HTML


def _html_cell(cell: Cell, href: Callable[[str], str]) -> str:
    if isinstance(cell, Link):
        return f'<a href="{html.escape(href(cell.target))}">{html.escape(cell.text)}</a>'
    return html.escape(cell)


def html_table(table: Table, href: Callable[[str], str] = str) -> str:
    title = f"<h3>{html.escape(table.title)}</h3>" if table.title else ""
    if not table.rows:
        return f"{title}<p>none</p>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.headers)
    body = "".join("<tr>" + "".join(f"<td>{_html_cell(c, href)}</td>" for c in row) + "</tr>" for row in table.rows)
    return f"{title}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_figures(drawings: list[Drawing]) -> str:
    return "".join(
        f'<figure id="{d.name}"><figcaption>{html.escape(d.title)}</figcaption>{d.svg}</figure>' for d in drawings
    )


def html_of(sections: list[Block], drawings: list[Drawing], folder: Path | None = None) -> str:
    """The blocks as a page; the figures go after the first block's notes."""
    href = relative_to(folder)
    parts = []
    for number_, block in enumerate(sections):
        tag = "h1" if number_ == 0 else "h2"
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in block.notes)
        tables = "".join(html_table(t, href) for t in block.tables)
        figures = html_figures(drawings) if number_ == 0 else ""
        parts.append(f"<section><{tag}>{html.escape(block.heading)}</{tag}>{notes}{figures}{tables}</section>")
    return html_page(sections[0].heading, "".join(parts))


def render_html(comparison: Comparison, drawings: list[Drawing], folder: Path | None = None) -> str:
    return html_of(blocks(comparison), drawings, folder)
