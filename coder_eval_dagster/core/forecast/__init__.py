"""The cost forecast of a run before it starts (``coder-eval run ... --estimate``), and the budget check at start.

Per row-task: the median and p90 of the same row-task's earlier evaluations
in the runs folder's ``task_results`` tables (history.py); where there are
none, the bound its limits and the run's prices give (bounds.py). Summed per
variant and in total (figures.py), the agent, the judges and the simulated
user apart. Nothing is run or written.
"""

from __future__ import annotations

from pathlib import Path

from ..layout import TABLES_DIR
from ..pricing import PriceBook
from ..resolution import Resolution, RowTask
from ..routing import Backend
from .bounds import bound
from .figures import Figures, Forecast, RowForecast, Totals
from .history import Key, Observed, observed
from .render import usd

__all__ = ["Figures", "Forecast", "RowForecast", "Totals", "budget_warning", "forecast"]


def forecast(
    resolution: Resolution,
    runs_dir: Path,
    workers: int,
    prices: PriceBook | None = None,
    backend: Backend = "direct",
) -> Forecast:
    """The forecast of ``resolution``'s row-tasks from the history under ``runs_dir``, at ``workers`` evaluations
    at once; ``prices`` default to the resolution's price file over the built-in ones, priced as ``backend``
    names the models."""
    book = prices if prices is not None else PriceBook(resolution.prices)
    tables_dir = runs_dir / TABLES_DIR
    history = observed(tables_dir, list(dict.fromkeys(key_of(rt) for rt in resolution.row_tasks)))
    rows = [_row(rt, history.rows.get(key_of(rt)), book, backend) for rt in resolution.row_tasks]
    return Forecast(rows, workers, tables_dir, history.runs, history.warnings)


def key_of(row_task: RowTask) -> Key:
    """What makes earlier evaluations "the same row-task" (history.py)."""
    agent = row_task.task.agent
    return row_task.variant_id, row_task.task_id, agent.resolved_type, agent.model


def _row(row_task: RowTask, seen: Observed | None, prices: PriceBook, backend: Backend) -> RowForecast:
    variant, task_id, agent_type, model = key_of(row_task)
    if seen is not None:
        return RowForecast(
            variant, task_id, agent_type, model, row_task.replicates, seen.observations, seen.median, seen.p90
        )
    figures, notes = bound(row_task, prices, backend)
    return RowForecast(variant, task_id, agent_type, model, row_task.replicates, 0, figures, figures, notes)


def budget_warning(result: Forecast, max_usd: float) -> str | None:
    """The line to print at the start of a run whose forecast exceeds its budget (``None`` when it does not).

    The expected USD is compared (history medians, bounds for rows without
    history); a floor (some payer unknown) that already exceeds it warns too.
    """
    total = result.total
    if total.usd <= max_usd:
        return None
    floor = "at least " if not total.usd_complete else ""
    bounded = f"; {total.without_history} evaluation(s) counted at their limits" if total.without_history else ""
    return (
        f"warning: the forecast of this run is {floor}{usd(total.usd)} (p90 {usd(total.usd_p90)}{bounded}), over its "
        f"budget of ${max_usd:g}: it will stop starting evaluations when the budget is spent "
        "(coder-eval run ... --estimate shows the forecast)"
    )
