"""``<runs-dir>/index.html``: every run folder with its verdict and links, refreshed at the end of every run.

Light on purpose (no pandas, scipy or matplotlib): it runs at the end of
every `coder-eval run`.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from ..layout import (
    COMPARISON_PAGE,
    INDEX_PAGE,
    INDEX_ROW,
    RUN_FILE,
    RUN_MD,
    RUN_VIEWER,
    read_record,
    report_path,
    write_atomically,
)
from ..models.report import RunSummary, TaskRow
from ..problems import InvalidInput
from ..reports.run_summary import agent_usd, judges_usd, total_usd, usd
from .webpage import html_page, relative_to


def _pass_rates(rows: list[TaskRow]) -> str:
    """Pass rate per variant, ERROR evaluations excluded as in run.md and ``compare``, and said so: a run failing on
    its ERRORs read 100 %."""
    rates = []
    for variant in sorted({row.variant_id for row in rows}):
        of_variant = [row for row in rows if row.variant_id == variant]
        valid = [row for row in of_variant if row.status != "ERROR"]
        passed = sum(row.success for row in valid)
        figures = [f"{passed / len(valid):.0%}"] if valid else []
        if len(valid) < len(of_variant):
            figures.append(f"{len(of_variant) - len(valid)} ERROR excluded")
        rates.append(f"{variant}: {passed}/{len(valid)}" + (f" ({', '.join(figures)})" if figures else ""))
    return "; ".join(rates)


def _spend(report: RunSummary) -> str:
    """Spend per variant: the agent apart from the judges and the simulated user, each with its source."""
    parts = []
    for variant, spend in report.spend_by_variant.items():
        if spend.agent is None and spend.judges is None and spend.simulator is None:
            continue
        parts.append(
            f"{variant}: {total_usd(spend)} (agent {agent_usd(spend)}, judges {judges_usd(spend)}, "
            f"simulated user {usd(spend.simulator)})"
        )
    return "; ".join(parts) or "–"


LISTED_REPORTS = 50  # a run's task reports in the index; past that, those that did not pass (the viewer has all)


def _link(text: str, target: Path, href: Callable[[str], str]) -> str:
    return f'<a href="{html.escape(href(str(target)))}">{html.escape(text)}</a>'


def _report_item(run_dir: Path, row: TaskRow, href: Callable[[str], str]) -> str:
    variant, task_id, replicate = row.variant_id, row.task_id, row.replicate_index
    link = _link(f"{variant} {task_id} #{replicate:02d}", run_dir / report_path(variant, task_id, replicate), href)
    return f"<li>{link} {html.escape(row.status)}</li>"


def _index_row(run_dir: Path, report: RunSummary, href: Callable[[str], str]) -> str:
    rows = report.task_results
    links = [_link(RUN_MD, run_dir / RUN_MD, href)]
    if (run_dir / RUN_VIEWER).is_file():
        links.insert(0, _link("viewer", run_dir / RUN_VIEWER, href))
    if (run_dir / COMPARISON_PAGE).is_file():
        links.append(_link("comparison", run_dir / COMPARISON_PAGE, href))
    listed = rows if len(rows) <= LISTED_REPORTS else [row for row in rows if not row.success][:LISTED_REPORTS]
    reports = "".join(_report_item(run_dir, row, href) for row in listed)
    if len(listed) < len(rows):  # the index holds every run: a run of thousands would make it megabytes
        reports += f"<li>{len(rows) - len(listed)} more: the run's viewer lists every evaluation</li>"
    details = f"<details><summary>task reports</summary><ul>{reports}</ul></details>" if reports else ""
    verdict = "PASSED" if report.passed else "FAILED"
    cells = [
        html.escape(report.run_id),
        html.escape(report.start_time[:19].replace("T", " ")),
        str(len({row.task_id for row in rows})),
        html.escape(_pass_rates(rows)),
        html.escape(_spend(report)),
    ]
    return (
        "<tr>"
        + "".join(f"<td>{c}</td>" for c in cells)
        + f'<td class="{verdict.lower()}">{verdict}</td><td>{" · ".join(links)}{details}</td></tr>'
    )


def _cached_row(run_file: Path, href: Callable[[str], str], written: RunSummary | None = None) -> str | None:
    """The run's row, kept in the run folder and re-rendered only when run.json or the comparison page changed.

    Refreshing the index re-reads only what changed, not every run.json of
    every earlier run; the run that has just ``written`` its run.json is not
    read back (a 1,000-row run.json took ~0.07 s to parse). None for a
    run.json being replaced right now (the next refresh picks it up).
    """
    run_dir = run_file.parent
    try:
        stamp = f"{run_file.stat().st_mtime_ns} {(run_dir / COMPARISON_PAGE).is_file()}"
        cache = run_dir / INDEX_ROW
        if cache.is_file():
            cached_stamp, _, row = cache.read_text(encoding="utf-8").partition("\n")
            if cached_stamp == stamp:
                return row
        report = written or read_record(run_file, RunSummary)  # bounded: a FIFO is no run.json
        row = _index_row(run_dir, report, href)
    except (OSError, InvalidInput):  # (a run.json that is not JSON, or not one, is an InvalidInput)
        return None
    write_atomically(cache, f"{stamp}\n{row}")
    return row


def render_index(runs_dir: Path, written: tuple[Path, RunSummary] | None = None) -> str:
    """Every run folder, newest first: date, tasks, pass rate per variant, spend per variant, verdict and links;
    ``written``: a run folder and the run.json it has just written."""
    href = relative_to(runs_dir)
    rows = []
    run_files = [path for path in runs_dir.glob(f"*/{RUN_FILE}") if not path.parent.is_symlink()]  # not ``latest``
    for run_file in sorted(run_files, reverse=True):
        row = _cached_row(run_file, href, written[1] if written and written[0] == run_file.parent else None)
        if row is not None:
            rows.append(row)
    columns = ("run", "started", "tasks", "pass rate per variant", "spend per variant", "verdict", "links")
    head = "".join(f"<th>{h}</th>" for h in columns)
    table = (
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>" if rows else "<p>no runs yet</p>"
    )
    return html_page("coder-eval runs", f"<h1>Runs in {html.escape(runs_dir.name)}</h1>{table}")


def write_index(runs_dir: Path, written: tuple[Path, RunSummary] | None = None) -> Path:
    path = runs_dir / INDEX_PAGE
    write_atomically(path, render_index(runs_dir, written))
    return path
