"""``<run_dir>/index.html``: the run viewer, one row per evaluation, sortable and filterable, at 10,000 rows.

One self-contained page (no network, works from file://): the rows are
compact JSON inside it, strings that repeat (variants, statuses, reasons,
tags) stored once; a criterion's description is stored as the text every
row's description of it starts and ends with (once) and what lies between
(a row's values, often the same for all its criteria: stored once too). A
small inline script decodes them, filters, sorts and draws one page of rows
at a time, so the document never holds 10,000 rows. The filter, sort and
page live in the address's #fragment: back from a task.html, the reader
finds the view as it was. Above it all, the run's verdict and why it failed,
from run.json.
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
# ``criteria``: its list of criteria in the page's table (``Descriptions``); ``failing``: a position in that list.
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
    "cost_complete",
    "tags",
    "href",
    "criteria",
    "notes",
)
INTERNED = ("variant", "status", "why", "tags", "notes")
Template = tuple[str, str, str]  # a criterion's type and the text its description starts and ends with in every row


class Strings:
    """A string table: each distinct string stored once, rows refer to it by index."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, text: str | None) -> int | None:
        return None if text is None else self.add(text)

    def add(self, text: str) -> int:
        return self.index.setdefault(text, len(self.index))

    @property
    def table(self) -> list[str]:
        return list(self.index)


class Descriptions:
    """An evaluation's criteria as one number: its list of [template, middle] pairs, each distinct list stored once.
    The template (type, start, end) is what every row's description of that criterion of its task shares, the
    middle what the row adds (a string table index).

    A dataset's descriptions differ by the row's values alone (``answers: ${row.question}``): whole, they made a
    10,000-row page of three such criteria 5.6 MB; the middles of a row's criteria are often one string, stored
    once. Where the descriptions are the same in every row, so is the list.
    """

    def __init__(self, results: list[EvaluationResult], strings: Strings) -> None:
        texts: dict[tuple[str, int, str], list[str]] = {}
        for result in results:
            for criterion in result.criteria:
                texts.setdefault(_slot(result, criterion), []).append(criterion.description)
        self.slots = {slot: index for index, slot in enumerate(texts)}
        self.templates: list[Template] = [(slot[2], *_common_ends(texts[slot])) for slot in texts]
        self.strings = strings
        self.lists: dict[tuple[tuple[int, int], ...], int] = {}

    def __call__(self, result: EvaluationResult) -> int:
        criteria = tuple(self._pair(result, criterion) for criterion in result.criteria)
        return self.lists.setdefault(criteria, len(self.lists))

    def _pair(self, result: EvaluationResult, criterion: CriterionResult) -> tuple[int, int]:
        index = self.slots[_slot(result, criterion)]
        _, start, end = self.templates[index]
        text = criterion.description
        return index, self.strings.add(text[len(start) : len(text) - len(end)])

    @property
    def table(self) -> list[tuple[tuple[int, int], ...]]:
        return list(self.lists)


def _slot(result: EvaluationResult, criterion: CriterionResult) -> tuple[str, int, str]:
    """A criterion of a task, the same in each of its rows: its base task, position and type."""
    return result.base_task_id, criterion.index, criterion.type


def _common_ends(texts: list[str]) -> tuple[str, str]:
    """The longest start and then end that every text has (never overlapping in any of them)."""
    start = _common_start(texts)
    return start, _common_start([text[len(start) :][::-1] for text in texts])[::-1]


def _common_start(texts: list[str]) -> str:
    """The longest start every text has: the one the first and the last of them in sorted order share."""
    first, last = min(texts), max(texts)  # the first is the shorter where one starts the other
    shared = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first))
    return first[:shared]


def first_failing(result: EvaluationResult) -> int | None:
    """The position of the first gating criterion that failed (advisory ones of an early-stopped run do not gate)."""
    return next((i for i, c in enumerate(result.criteria) if c.gating and not c.advisory and not c.passed), None)


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


def viewer_row(result: EvaluationResult, strings: Strings, descriptions: Descriptions) -> list[Any]:
    failing = first_failing(result)
    values = {
        "variant": strings(result.variant_id),
        "task": result.task_id,
        "row": result.row_id,
        "rep": result.replicate,
        "status": strings(result.final_status),
        "ok": int(result.success),
        "score": round(result.weighted_score, 3),
        "failing": failing,
        "why": strings(_why(result, None if failing is None else result.criteria[failing])),
        "secs": round(result.duration_s, 2),
        "turns": result.turns,
        "tokens": _tokens(result),
        "cost": result.total_cost_usd,  # the agent's, the judges' and the simulated user's
        "cost_complete": int(result.cost_complete),  # 0: the cost is a floor, part of it unknown
        "tags": [strings(tag) for tag in result.tags],
        "href": report_path(result.variant_id, result.task_id, result.replicate),
        "criteria": descriptions(result),  # shown as the failing one, and searched
        "notes": [strings(f"{note.kind}: {note.text}") for note in run_time_notes(result)],  # its warnings among them
    }
    return [values[name] for name in FIELDS]


def viewer_data(run_id: str, results: list[EvaluationResult], variants: list[str]) -> dict[str, Any]:
    strings = Strings()
    descriptions = Descriptions(results, strings)
    ordered = sorted(results, key=lambda r: (r.task_id, r.replicate, r.variant_id))
    rows = [viewer_row(result, strings, descriptions) for result in ordered]
    return {
        "run": run_id,
        "variants": variants,
        "fields": FIELDS,
        "interned": INTERNED,
        "templates": descriptions.templates,
        "criteria": descriptions.table,
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
