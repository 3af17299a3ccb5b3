"""The forecast as values: what one evaluation is expected to spend, per row-task, per variant and in total.

Spend is kept in three payers (the subject agent, the judges, the simulated
user), as run.json's ``spend`` keeps it, so that a forecast reads against a
run's actual spend line by line. A part nothing can tell (no cost in the
history, no limit to bound it) is marked unknown rather than guessed: the
sums over it are then floors, and say so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

USD_PARTS = ("agent_usd", "judges_usd", "simulator_usd")
TOKEN_PARTS = ("agent_tokens", "judge_tokens", "simulator_tokens")
DURATION = "duration_s"


@dataclass(frozen=True)
class Figures:
    """USD and tokens of the agent, the judges and the simulated user, and the seconds an evaluation takes.

    ``unknown`` names the parts neither the history nor a limit gives (their
    value here is 0): a sum including them is a floor.
    """

    agent_usd: float = 0.0
    judges_usd: float = 0.0
    simulator_usd: float = 0.0
    agent_tokens: float = 0.0
    judge_tokens: float = 0.0
    simulator_tokens: float = 0.0
    duration_s: float = 0.0
    unknown: frozenset[str] = frozenset()

    @classmethod
    def of(cls, values: dict[str, float | None]) -> Figures:
        """From values by part name, ``None`` for a part that is not known."""
        known = {name: float(value) for name, value in values.items() if value is not None}
        return cls(**known, unknown=frozenset(name for name, value in values.items() if value is None))

    @property
    def usd(self) -> float:
        return self.agent_usd + self.judges_usd + self.simulator_usd

    @property
    def tokens(self) -> float:
        return self.agent_tokens + self.judge_tokens + self.simulator_tokens

    @property
    def usd_complete(self) -> bool:
        """False when some payer's USD is not known: ``usd`` is then a floor."""
        return not self.unknown.intersection(USD_PARTS)

    def times(self, count: float) -> Figures:
        """``count`` evaluations' worth (the duration too: their seconds of work, one after another)."""
        return replace(self, **{name: getattr(self, name) * count for name in _values()})

    def __add__(self, other: Figures) -> Figures:
        summed = {name: getattr(self, name) + getattr(other, name) for name in _values()}
        return Figures(**summed, unknown=self.unknown | other.unknown)

    def to_json(self) -> dict[str, Any]:
        """Every part, rounded; ``unknown`` lists the parts counted as 0 (the totals over them are floors)."""
        data: dict[str, Any] = {name: _rounded(name, getattr(self, name)) for name in _values()}
        return {**data, "usd": round(self.usd, 6), "tokens": round(self.tokens), "unknown": sorted(self.unknown)}


def _values() -> list[str]:
    return [item.name for item in fields(Figures) if item.name != "unknown"]


def _rounded(name: str, value: float) -> float | int:
    if name in TOKEN_PARTS:
        return round(value)
    return round(value, 6 if name in USD_PARTS else 1)


def summed(figures: Iterable[Figures]) -> Figures:
    total = Figures()
    for each in figures:
        total = total + each
    return total


@dataclass(frozen=True)
class RowForecast:
    """One row-task under one variant: its evaluations (replicates), what each is expected to spend, and from what.

    With history (``observations`` > 0), ``median`` and ``p90`` are those of
    the earlier evaluations of the same task, variant, agent type and model.
    Without, both are the bound from the task's limits, and ``notes`` says
    what bounds each payer, or that nothing does.
    """

    variant_id: str
    task_id: str
    agent_type: str
    model: str | None
    evaluations: int
    observations: int
    median: Figures
    p90: Figures
    notes: tuple[str, ...] = ()

    @property
    def from_history(self) -> bool:
        return self.observations > 0

    def to_json(self) -> dict[str, Any]:
        basis: dict[str, Any] = (
            {"median": self.median.to_json(), "p90": self.p90.to_json()}
            if self.from_history
            else {"bound": self.median.to_json()}
        )
        return {
            "variant_id": self.variant_id,
            "task_id": self.task_id,
            "agent_type": self.agent_type,
            "model": self.model,
            "evaluations": self.evaluations,
            "history": self.observations,
            "basis": "history" if self.from_history else "limits",
            **basis,
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Totals:
    """Row-tasks summed: history rows at their median (and p90), rows without history at their bound.

    ``usd`` (median plus bounds) is the figure to hold against a budget;
    ``usd_p90`` its pessimistic reading (each row at its p90: the sum of
    p90s, above the p90 of the sum). Wall time is the work spread over the
    run's concurrency, and never shorter than its longest evaluation.
    """

    evaluations: int
    without_history: int  # evaluations of row-tasks with no history (bounded by limits)
    median: Figures  # the history rows, each at its median
    p90: Figures  # the history rows, each at its p90
    bound: Figures  # the rows without history, each at its bound
    wall_s: float
    wall_s_p90: float
    wall_complete: bool  # False: some row's duration is unknown, the wall times are floors

    @classmethod
    def of(cls, rows: list[RowForecast], workers: int) -> Totals:
        history = [row for row in rows if row.from_history]
        bounded = [row for row in rows if not row.from_history]
        return cls(
            evaluations=sum(row.evaluations for row in rows),
            without_history=sum(row.evaluations for row in bounded),
            median=_sum_of(history, lambda row: row.median),
            p90=_sum_of(history, lambda row: row.p90),
            bound=_sum_of(bounded, lambda row: row.median),
            wall_s=wall_time(rows, lambda row: row.median, workers),
            wall_s_p90=wall_time(rows, lambda row: row.p90, workers),
            wall_complete=not any(DURATION in row.median.unknown for row in rows),
        )

    @property
    def expected(self) -> Figures:
        """The median of the history rows plus the bound of the others."""
        return self.median + self.bound

    @property
    def usd(self) -> float:
        return self.expected.usd

    @property
    def usd_p90(self) -> float:
        return (self.p90 + self.bound).usd

    @property
    def usd_complete(self) -> bool:
        """False when some payer of some row is neither in the history nor bounded: ``usd`` is then a floor."""
        return self.expected.usd_complete and self.p90.usd_complete

    def to_json(self) -> dict[str, Any]:
        return {
            "evaluations": self.evaluations,
            "evaluations_without_history": self.without_history,
            "usd": round(self.usd, 6),
            "usd_p90": round(self.usd_p90, 6),
            "usd_complete": self.usd_complete,
            "expected": self.expected.to_json(),
            "median": self.median.to_json(),
            "p90": self.p90.to_json(),
            "bound": self.bound.to_json(),
            "wall_s": round(self.wall_s, 1),
            "wall_s_p90": round(self.wall_s_p90, 1),
            "wall_complete": self.wall_complete,
        }


def _sum_of(rows: list[RowForecast], pick: Callable[[RowForecast], Figures]) -> Figures:
    return summed(pick(row).times(row.evaluations) for row in rows)


def wall_time(rows: list[RowForecast], pick: Callable[[RowForecast], Figures], workers: int) -> float:
    """The evaluations' seconds of work spread over ``workers``, but never less than the longest one: a run of
    fewer evaluations than workers lasts as long as its slowest."""
    work = sum(pick(row).duration_s * row.evaluations for row in rows)
    longest = max((pick(row).duration_s for row in rows), default=0.0)
    return max(work / max(workers, 1), longest)


@dataclass(frozen=True)
class Forecast:
    """A run's forecast: per row-task, per variant and in total, at ``workers`` evaluations at once."""

    rows: list[RowForecast]
    workers: int
    tables_dir: Path
    history_runs: int  # earlier runs the history rows come from
    warnings: list[str] = field(default_factory=list)  # e.g. history tables that could not be read

    @property
    def variants(self) -> dict[str, Totals]:
        grouped: dict[str, list[RowForecast]] = {}
        for row in self.rows:
            grouped.setdefault(row.variant_id, []).append(row)
        return {variant: Totals.of(rows, self.workers) for variant, rows in grouped.items()}

    @property
    def total(self) -> Totals:
        return Totals.of(self.rows, self.workers)

    @property
    def usd(self) -> float:
        """The run's expected USD (history medians, bounds where there is none): what a budget is compared with."""
        return self.total.usd

    def to_json(self) -> dict[str, Any]:
        return {
            "concurrency": self.workers,
            "tables": str(self.tables_dir),
            "history_runs": self.history_runs,
            "total": self.total.to_json(),
            "variants": {variant: totals.to_json() for variant, totals in self.variants.items()},
            "rows": [row.to_json() for row in self.rows],
            "warnings": self.warnings,
        }
