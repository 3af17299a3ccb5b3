"""``<run_dir>/index.html``: the run viewer, one row per evaluation, sortable and filterable, at 10,000 rows.

One self-contained page (no network, works from file://): the rows are
compact JSON inside it, strings that repeat (variants, statuses, criteria,
tags) stored once; a small inline script decodes them, filters, sorts and
draws one page of rows at a time, so the document never holds 10,000 rows.
The filter, sort and page live in the address's #fragment: back from a
task.html, the reader finds the view as it was. Above it all, the run's
verdict and why it failed, from run.json.
"""

from __future__ import annotations

import json
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..layout import (
    COMPARISON_PAGE,
    INDEX_PAGE,
    RUN_FILE,
    RUN_MD,
    RUN_VIEWER,
    load_summary,
    report_path,
    write_atomically,
)
from ..models.report import RunSummary
from ..models.results import CriterionResult, EvaluationResult
from .notes import run_time_notes, verdict_line
from .shown_text import criterion_score

TEMPLATE = "run_viewer.html"  # the page, its style and its script, beside this module
WHY_CHARS = 300  # the reason shown for a row; task.html has the whole of it
# Each row, in this order; the interned fields hold indexes into the page's string table (tags: a list of them).
FIELDS = (
    "variant",
    "task",
    "row",
    "rep",
    "status",
    "ok",
    "score",
    "failing",
    "why",
    "secs",
    "turns",
    "tokens",
    "cost",
    "tags",
    "href",
    "criteria",
    "notes",
)
INTERNED = ("variant", "status", "failing", "why", "tags", "criteria", "notes")


class Strings:
    """A string table: each distinct string stored once, rows refer to it by index."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, text: str | None) -> int | None:
        if text is None:
            return None
        return self.index.setdefault(text, len(self.index))

    @property
    def table(self) -> list[str]:
        return list(self.index)


def first_failing(result: EvaluationResult) -> CriterionResult | None:
    """The first gating criterion that failed (advisory ones of an early-stopped run do not gate)."""
    return next((c for c in result.criteria if c.gating and not c.advisory and not c.passed), None)


def _why(result: EvaluationResult, failing: CriterionResult | None) -> str | None:
    """Why the row did not pass, in one capped line: the evaluation's own error first, as run.md says it (a
    timeout's or a budget's stop is why its criteria failed), else the criterion's error, rationale or score."""
    reason = result.error
    if not reason and failing is not None:
        rationale = failing.details.get("rationale")
        reason = failing.error or (rationale if isinstance(rationale, str) and rationale else None)
        reason = reason or f"score {criterion_score(failing)} < {failing.pass_threshold:g}"
    if not reason:
        return None
    line = " ".join(reason.split())
    return line if len(line) <= WHY_CHARS else line[:WHY_CHARS] + "…"


def _tokens(result: EvaluationResult) -> int | None:
    """The agent's tokens, every kind (uncached input, cache reads and writes, output); None when no agent ran."""
    usage = result.total_token_usage
    return None if usage is None else usage.total_tokens


def viewer_row(result: EvaluationResult, strings: Strings) -> list[Any]:
    failing = first_failing(result)
    values = {
        "variant": strings(result.variant_id),
        "task": result.task_id,
        "row": result.row_id,
        "rep": result.replicate,
        "status": strings(result.final_status),
        "ok": int(result.success),
        "score": round(result.weighted_score, 3),
        "failing": strings(f"{failing.type} \u201c{failing.description}\u201d" if failing else None),
        "why": strings(_why(result, failing)),
        "secs": round(result.duration_s, 2),
        "turns": result.turns,
        "tokens": _tokens(result),
        "cost": result.total_cost_usd,  # the agent's, the judges' and the simulated user's
        "tags": [strings(tag) for tag in result.tags],
        "href": report_path(result.variant_id, result.task_id, result.replicate),
        "criteria": strings("\n".join(c.description for c in result.criteria)),  # what the search box matches
        "notes": [strings(f"{note.kind}: {note.text}") for note in run_time_notes(result)],  # its warnings among them
    }
    return [values[name] for name in FIELDS]


def viewer_data(run_id: str, results: list[EvaluationResult], variants: list[str]) -> dict[str, Any]:
    strings = Strings()
    ordered = sorted(results, key=lambda r: (r.task_id, r.replicate, r.variant_id))
    rows = [viewer_row(result, strings) for result in ordered]
    return {
        "run": run_id,
        "variants": variants,
        "fields": FIELDS,
        "interned": INTERNED,
        "strings": strings.table,
        "rows": rows,
    }


def _embedded(data: dict[str, Any]) -> str:
    """Compact JSON that cannot end its <script> element early (every ``<`` escaped)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def verdict_html(report: RunSummary | None) -> str:
    """The run's verdict and why, in one line above everything (nothing without a run.json: a run not finished)."""
    if report is None:
        return ""
    verdict = "PASSED" if report.passed else "FAILED"
    return f'<p id="verdict" class="verdict {verdict}">{escape(verdict_line(report))}</p>'


def render_run_viewer(
    run_id: str,
    results: list[EvaluationResult],
    variants: list[str],
    with_comparison: bool = False,
    report: RunSummary | None = None,
) -> str:
    links = [f'<a href="{RUN_MD}">run.md</a>', f'<a href="../{INDEX_PAGE}">all runs</a>']
    if with_comparison:
        links.insert(1, f'<a href="{COMPARISON_PAGE}">comparison</a>')
    page = files(__package__).joinpath(TEMPLATE).read_text(encoding="utf-8")
    return (
        page.replace("{{title}}", escape(f"Run {run_id}"))
        .replace("{{verdict}}", verdict_html(report))
        .replace("{{links}}", " · ".join(links))
        .replace("{{data}}", _embedded(viewer_data(run_id, results, variants)))  # last: the data may hold anything
    )


def write_run_viewer(
    run_dir: Path, results: list[EvaluationResult], variants: list[str], report: RunSummary | None = None
) -> Path:
    """The viewer, its verdict from ``report`` or else the run folder's run.json (``coder-eval report -f html``)."""
    path = run_dir / RUN_VIEWER
    if report is None and (run_dir / RUN_FILE).is_file():
        report = load_summary(run_dir)
    page = render_run_viewer(run_dir.name, results, variants, (run_dir / COMPARISON_PAGE).is_file(), report)
    write_atomically(path, page)
    return path
