"""A forecast for the terminal (a table per variant and in total, then the rows without history) or as JSON."""

from __future__ import annotations

import json

from .figures import Figures, Forecast, RowForecast, Totals

MAX_LISTED_ROWS = 20  # rows without history listed one by one; the rest are counted
COLUMNS = (
    "variant",
    "evaluations",
    "no history",
    "tokens",
    "USD",
    "USD p90",
    "agent",
    "judges",
    "simulated user",
    "wall",
    "wall p90",
)


def render_json(result: Forecast) -> str:
    return json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n"


def render_table(result: Forecast) -> str:
    total = result.total
    variants = result.variants
    lines = [
        f"forecast: {total.evaluations} evaluation(s) of {len(result.rows)} row-task(s) in {len(variants)} "
        f"variant(s), at concurrency {result.workers}; nothing was run",
        _history_line(result),
        "",
        *aligned(
            list(COLUMNS),
            [_totals_cells(name, totals) for name, totals in variants.items()] + [_totals_cells("total", total)],
        ),
        "",
        "USD: each row-task at the median of its history (p90: its 90th percentile), or at the bound of its",
        "limits without history; agent, judges and simulated user apart. Wall: the work over the concurrency,",
        "at least the longest evaluation.",
        *[f"warning: {warning}" for warning in result.warnings],
    ]
    lines += _without_history(result.rows)
    return "\n".join(lines) + "\n"


def _history_line(result: Forecast) -> str:
    rows = [row for row in result.rows if row.from_history]
    if not rows:
        return f"history: none under {result.tables_dir} for these row-tasks"
    return (
        f"history: {sum(row.observations for row in rows)} earlier evaluation(s) of {len(rows)} row-task(s) in "
        f"{result.history_runs} run(s) under {result.tables_dir} (same task, variant, agent type and model)"
    )


def _totals_cells(name: str, totals: Totals) -> list[str]:
    expected = totals.expected
    floor = "" if totals.usd_complete else "≥"
    wall_floor = "" if totals.wall_complete else "≥"
    return [
        name,
        str(totals.evaluations),
        str(totals.without_history),
        ("" if "agent_tokens" not in expected.unknown else "≥") + f"{expected.tokens:,.0f}",
        floor + usd(totals.usd),
        floor + usd(totals.usd_p90),
        *[_part(expected, part) for part in ("agent_usd", "judges_usd", "simulator_usd")],
        wall_floor + duration(totals.wall_s),
        wall_floor + duration(totals.wall_s_p90),
    ]


def _part(figures: Figures, name: str) -> str:
    return ("≥" if name in figures.unknown else "") + usd(getattr(figures, name))


def _without_history(rows: list[RowForecast]) -> list[str]:
    """Each row-task without history: its bound per evaluation and what bounds each payer."""
    bounded = [row for row in rows if not row.from_history]
    if not bounded:
        return []
    lines = ["", f"without history ({len(bounded)} row-task(s)): bounded by their limits, per evaluation"]
    for row in bounded[:MAX_LISTED_ROWS]:
        figure = bound_text(row.median)
        lines.append(f"  {row.variant_id} {row.task_id}: {figure} ({'; '.join(row.notes)})")
    if len(bounded) > MAX_LISTED_ROWS:
        lines.append(f"  ... and {len(bounded) - MAX_LISTED_ROWS} more (--format json lists them all)")
    return lines


def bound_text(figures: Figures) -> str:
    """A bound per evaluation: ``≤ $X``, or unbounded (with what is known of it)."""
    if figures.usd_complete:
        return f"≤ {usd(figures.usd)}"
    return f"unbounded (≥ {usd(figures.usd)} known)" if figures.usd else "unbounded"


def aligned(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Columns padded to their widest cell: the first to the left, the figures to the right."""
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: list[str]) -> str:
        padded = [
            cell.rjust(width) if index else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(padded).rstrip()

    return [line(headers), *[line(row) for row in rows]]


def usd(value: float) -> str:
    return f"${value:,.4f}" if value < 100 else f"${value:,.0f}"


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"
