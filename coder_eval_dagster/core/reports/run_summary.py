"""run.md, and the verdict run.json records: the whole run at a glance."""

from __future__ import annotations

import html
import re

from ..criteria.classification_match import SENTINELS
from ..layout import RUN_VIEWER, replicate_name, report_path
from ..models.report import RunSummary, Spend, TaskRow
from ..models.results import CriterionResult, EvaluationResult, TokenUsage
from ..suite import SuiteEntry
from .notes import (
    NOT_MEASURED,
    budget_left_out,
    dollars,
    evaluations,
    flaky_figures,
    run_time_notes,
    spent_of_budget,
    threshold_figures,
)
from .shown_text import criterion_score, one_line, skipped_file


def failing_criteria(row: TaskRow) -> list[str]:
    """The gating criteria that failed: type, description, score and error."""
    return [
        f"{c.type} \u201c{c.description}\u201d score {criterion_score(c)}" + (f": {c.error}" if c.error else "")
        for c in row.criteria
        if c.gating and not c.passed and not c.advisory
    ]


def why_not_passed(row: TaskRow) -> str:
    """One line: the error (a multi-line command's whole text, on one line), or the gating criteria that failed
    (type, description, score)."""
    if row.error_message:
        return one_line(row.error_message)
    return "; ".join(failing_criteria(row))


def gated(row: TaskRow) -> list[CriterionResult]:
    """The criteria its verdict rests on: gating, and not advisory (an early stop's unarmed ones are)."""
    return [c for c in row.criteria if c.gating and not c.advisory]


def run_passed(results: list[EvaluationResult], suite: list[SuiteEntry]) -> bool:
    """The run's verdict (and exit code): every task succeeded and every suite threshold was met."""
    return all(r.success for r in results) and all(entry.passed for entry in suite)


def counts_line(report: RunSummary) -> str:
    """``4 evaluations: 3 succeeded, 1 failed, 0 errors (1 FAILURE, 3 SUCCESS)``: the buckets and their statuses."""
    statuses: dict[str, int] = {}
    for row in report.task_results:
        statuses[row.status] = statuses.get(row.status, 0) + 1
    shown = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
    return (
        f"{report.tasks_run} evaluations: {report.tasks_succeeded} succeeded, {report.tasks_failed} failed, "
        f"{report.tasks_error} errors" + (f" ({shown})" if shown else "")
    )


def _by_variant(rows: list[TaskRow]) -> dict[str, list[TaskRow]]:
    groups: dict[str, list[TaskRow]] = {}
    for row in rows:
        groups.setdefault(row.variant_id, []).append(row)
    return groups


def md_cell(text: str) -> str:
    """Text safe inside a Markdown table cell: on one line (a carriage return ended the row too), no HTML a viewer
    would render, no link of the text's own (an agent's output lands here)."""
    escaped = html.escape(one_line(text), quote=False)
    return re.sub(r"([|\[\]])", r"\\\1", escaped)


def score_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def render_run_md(report: RunSummary, viewer: str | None = RUN_VIEWER) -> str:
    """The run's Markdown report; ``viewer``: the run viewer's path from where the text is read (None: it has none,
    a folder coder_eval wrote)."""
    lines = [f"# Run {report.run_id}", ""]
    verdict = "PASSED" if report.passed else "FAILED"
    experiment = report.experiment or "none"
    rate = "–" if report.pass_rate is None else f"{report.pass_rate:.1%}"
    lines += [
        f"**{verdict}** · experiment: {experiment} · started {report.start_time} · finished {report.end_time}",
        "",
        f"Tasks: {counts_line(report)}; pass rate {rate}.",
        "",
    ]
    if viewer is not None:
        lines += [f"Every evaluation, sortable and filterable: [run viewer]({viewer}).", ""]
    share = report.within_expected_turns_share
    if share is not None:
        lines += [f"Within expected turns: {share:.0%} of budgeted tasks.", ""]
    # ERROR excluded from the rate and the mean, as in the runs index, `compare` and the Dagster metadata
    header = "| variant | evaluations | passed | errors | pass rate (ERROR excluded) | mean score (ERROR excluded) |"
    lines += ["", header, "|---|---|---|---|---|---|"]
    for variant, rows in _by_variant(report.task_results).items():
        graded = [row for row in rows if row.category != "error"]
        passed = sum(row.success for row in graded)
        rate, mean = "-", "-"
        if graded:
            rate = f"{passed / len(graded):.1%}"
            mean = f"{sum(row.weighted_score or 0.0 for row in graded) / len(graded):.3f}"
        errors = len(rows) - len(graded)
        lines.append(f"| {md_cell(variant)} | {len(rows)} | {passed} | {errors} | {rate} | {mean} |")
    lines += [
        "",
        "| variant | task | # | status | score | criteria passed | duration (s) | why |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report.task_results:
        gating = gated(row)
        number = replicate_name(row.replicate_index)
        why = "" if row.success else why_not_passed(row)
        link = report_path(row.variant_id, row.task_id, row.replicate_index)
        lines.append(
            f"| {md_cell(row.variant_id)} | [{md_cell(row.task_id)}]({link}) | {number} "
            f"| {row.status} | {score_text(row.weighted_score)} | {sum(c.passed for c in gating)}/{len(gating)} "
            f"| {row.duration:.2f} | {md_cell(why)} |"
        )
    lines += _notes_lines(report)
    lines += _spend_lines(report)
    lines += _suite_lines(report)
    lines += _statistics_lines(report)
    if report.comparison:
        page, figure = report.comparison["page"], report.comparison["figure"]
        lines += ["", "## Variant comparison", "", f"![success rate per variant]({figure})", ""]
        lines += [f"Paired statistics, flips and per-task differences: [{page}]({page})"]
    if report.skipped_tasks:
        lines += ["", "Skipped:", *(f"- {skipped_file(s.path, s.reason)}" for s in report.skipped_tasks)]
    return "\n".join(lines) + "\n"


def _notes_lines(report: RunSummary) -> list[str]:
    """coder_eval's "Run-time Notes": one blockquote per note of each evaluation (its warnings among them), so a
    SUCCESS that was cut off or over budget says so here and not only in its task.json."""
    notes = [
        f"> **{note.kind}:** [{md_cell(row.task_id)}] [{md_cell(row.variant_id)}] "
        f"#{replicate_name(row.replicate_index)} {md_cell(note.text)}"
        for row in report.task_results
        for note in run_time_notes(row)
    ]
    if not notes:
        return []
    return ["", "## Run-time Notes", *(line for note in notes for line in ("", note))]


def _spend_lines(report: RunSummary) -> list[str]:
    """Tokens and dollars per variant: the agent apart from the judges and the simulated user, each cost's source."""
    if report.spend.agent is None and report.spend.judges is None and report.spend.simulator is None:
        return []
    lines = [
        "",
        "## Spend",
        "",
        "| variant | agent tokens: in / cache read / cache write / out | agent | judges | simulated user | total |",
        "|---|---|---|---|---|---|",
    ]
    by_variant = list(report.spend_by_variant.items())
    rows = [*by_variant, ("all", report.spend)] if len(by_variant) > 1 else by_variant
    for variant, spend in rows:
        agent = spend.agent
        tokens = (
            f"{agent.uncached_input_tokens:,} / {agent.cache_read_input_tokens:,} / "
            f"{agent.cache_creation_input_tokens:,} / {agent.output_tokens:,}"
            if agent
            else "–"
        )
        lines.append(
            f"| {md_cell(variant)} | {tokens} | {agent_usd(spend)} | {judges_usd(spend)} | {usd(spend.simulator)} "
            f"| {total_usd(spend)} |"
        )
    return lines


def _statistics_lines(report: RunSummary) -> list[str]:
    """Repeated trials (pass@k, pass^k, flaky rows and the gate) and the sequential A/B, when the run has them."""
    lines = []
    budget = report.budget or {}
    if budget.get("exhausted"):
        left = budget_left_out(report)
        lines += [
            "",
            f"Budget spent: {spent_of_budget(budget)}: {evaluations(left)} not run "
            + ("(`not_run` in run.json); the run fails." if left else "(every evaluation had started)."),
        ]
    flaky = report.flaky_gate
    if flaky is not None:
        verdict = "met" if flaky["passed"] else "NOT met"
        share, most = flaky_figures(flaky)
        lines += ["", f"Flaky rows: {share} of repeated rows (max_flaky_share {most}): {verdict}"]
    if not (report.pass_at_k or report.sequential):
        return lines
    from ..compare.run_statistics import run_md_lines  # numpy: only a run with these figures pays for it

    document = {"pass_at_k": report.pass_at_k, "pass_hat_k": report.pass_hat_k, "flaky_rows": report.flaky_rows}
    return lines + run_md_lines(document | {"sequential": report.sequential})


def total_usd(spend: Spend) -> str:
    """The total cost; ``≥`` when some tokens have no cost (a floor), ``–`` when none has one."""
    if spend.total_cost_usd is None:
        return "–"
    return f"{'' if spend.cost_complete else '≥ '}{dollars(spend.total_cost_usd)}"


def agent_usd(spend: Spend) -> str:
    """The agents' cost; a floor (``≥``) when a timeout cut some short before they reported all they spent."""
    shown = usd(spend.agent)
    if not spend.agents_cut_short or shown in ("–", "unknown"):
        return shown
    return f"{'' if shown.startswith('≥') else '≥ '}{shown} ({spend.agents_cut_short} cut short by a timeout)"


def judges_usd(spend: Spend) -> str:
    """The judges' cost, and how many verdicts were reused from an earlier scoring (called and paid for then, not
    now: they are not in the cost)."""
    reused = spend.judge_verdicts_reused
    return usd(spend.judges) + (f" ({reused} verdict{'s' if reused != 1 else ''} reused)" if reused else "")


def usd(usage: TokenUsage | None) -> str:
    """A cost with its source: ``$0.0123 (priced)``; ``unknown`` when tokens were spent on an unpriced model, and
    ``≥ $0.0123 (part unknown)`` when only some were (the known costs are a floor)."""
    if usage is None or not usage.spent:
        return "–"
    if usage.total_cost_usd is None:
        return "unknown"
    if not usage.priced_whole:
        return f"≥ {dollars(usage.total_cost_usd)} (part unknown)"
    source = f" ({usage.cost_source})" if usage.cost_source else ""
    return f"{dollars(usage.total_cost_usd)}{source}"


def _suite_lines(report: RunSummary) -> list[str]:
    if not report.suite:
        return []
    lines = ["", "## Suite metrics", ""]
    for entry in report.suite:
        metrics = entry["metrics"]
        shown = ("accuracy", "macro_f1") if "accuracy" in metrics else ("mean", "completion_rate")
        lines.append(
            f"- {entry['base_task_id']} [{entry['variant_id']}] criterion {entry['criterion_index']} "
            f"({entry['criterion_type']}): " + ", ".join(f"{name} {_metric_figure(metrics, name)}" for name in shown)
        )
        for threshold in entry["thresholds"]:
            mark = "met" if threshold["passed"] else "NOT met"
            lines.append(f"  - {threshold['metric']} {' >= '.join(threshold_figures(threshold))}: {mark}")
        lines += _confusion_lines(entry.get("confusion_matrix") or {})
    return lines


def _confusion_lines(matrix: dict[str, dict[str, int]]) -> list[str]:
    """A classification suite's confusion matrix as a table under its line: rows the expected labels, columns the
    predicted ones (``(none)`` and ``(other)`` among them), as run.json's ``confusion_matrix`` holds it."""
    if not matrix:
        return []
    labels = {label for row in matrix.values() for label in row}
    predicted = sorted(labels, key=lambda label: (label in SENTINELS, label))  # (none) and (other) last
    head = ["expected \\ predicted", *predicted]
    lines = ["", "  | " + " | ".join(md_cell(label) for label in head) + " |", "  |" + "---|" * len(head)]
    for expected, row in matrix.items():
        counts = [str(row.get(label, 0)) for label in predicted]
        lines.append("  | " + " | ".join([md_cell(expected), *counts]) + " |")
    return [*lines, ""]


def _metric_figure(metrics: dict[str, float], name: str) -> str:
    """A metric to 3 decimals; one no row measured (every row an ERROR) is not in a run coder_eval wrote."""
    return f"{metrics[name]:.3f}" if name in metrics else NOT_MEASURED
