"""What earlier runs spent: the ``task_results`` Parquet tables, read in place with DuckDB.

"The same row-task" is the same task id (``<task_id>/<row_id>`` for dataset
rows), variant id, agent type and agent model as configured (the ``agent_model``
column, not the ``model`` the agent reported using): a variant that changes the
model is another row-task, and so is a task run under ``--type replay``.
Evaluations that ended in ERROR are left out (most stopped before or without
the agent's spend, and would pull the median down), and so is everything
older than the last ``HISTORY_DEPTH`` evaluations of a row-task: prices and
agents change, and recent runs say more about the next one.

A judge verdict a rescore (or ``--retry-errors``) reused costs nothing in
``task_results`` (no call was made), but the next run calls that judge
again: the judges' part counts it at what it cost when it was made, which
its ``criteria_scores`` row keeps (``judge_usage``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from ..tables import SCHEMAS, duckdb_source
from .figures import DURATION, Figures

HISTORY_DEPTH = 20
P90 = 0.9
TABLE = "task_results"
CRITERIA = "criteria_scores"
NO_CRITERIA = "no_criteria"  # the criteria_scores of tables that have none: empty

Key = tuple[str, str, str, str | None]
KEY_COLUMNS = ("variant_id", "task_id", "agent_type", "agent_model")

# Each part of Figures as SQL over one task_results row (its judges' with its reused verdicts'). A cost left null
# where no token was spent is 0 (no judge, an agentless task); a null cost with tokens stays null: nobody priced
# them, and the part is then unknown.
_TOKENS = {
    "agent_tokens": "coalesce(input_tokens, 0) + coalesce(output_tokens, 0) + coalesce(cache_read_input_tokens, 0)"
    " + coalesce(cache_creation_input_tokens, 0)",
    "judge_tokens": "coalesce(judge_input_tokens, 0) + coalesce(judge_output_tokens, 0)"
    " + coalesce(reused_judge_tokens, 0)",
    "simulator_tokens": "coalesce(simulator_input_tokens, 0) + coalesce(simulator_output_tokens, 0)",
}
_COSTS = {
    "agent_usd": ("cost_usd", "agent_tokens"),
    "judges_usd": ("judge_cost_usd", "judge_tokens"),
    "simulator_usd": ("simulator_cost_usd", "simulator_tokens"),
}
# A row whose costs are a floor (cost_complete false) though the agent's is whole: a judge's or the simulated user's
# tokens went unpriced, and their cost there is a partial sum; as a part, unknown (which of the two, the row does
# not say: both are, where they spent tokens). A reused verdict nobody priced leaves the judges' part unknown too.
_NOT_THE_AGENT = (
    "NOT coalesce(cost_complete, true) AND coalesce(cost_source, '') <> 'unknown' AND final_status <> 'TIMEOUT'"
)
_FLOOR = {"judges_usd": f"({_NOT_THE_AGENT}) OR reused_judge_unpriced IS TRUE", "simulator_usd": _NOT_THE_AGENT}
PARTS = [*_COSTS, *_TOKENS, DURATION]


@dataclass(frozen=True)
class Observed:
    """A row-task's earlier evaluations: how many, and the median and p90 of each part per evaluation."""

    observations: int
    median: Figures
    p90: Figures


@dataclass(frozen=True)
class History:
    rows: dict[Key, Observed]
    runs: int  # distinct earlier runs among them
    warnings: list[str]


def observed(tables_dir: Path, keys: list[Key]) -> History:
    """The history of each of ``keys`` found under ``tables_dir`` (absent keys have none)."""
    folder = tables_dir / TABLE
    if not keys or not _has_files(folder):
        return History({}, 0, [])
    wanted = pa.table({name: [key[index] for key in keys] for index, name in enumerate(KEY_COLUMNS)})
    try:
        with duckdb.connect() as connection:
            connection.register("wanted", wanted)
            connection.register(NO_CRITERIA, SCHEMAS[CRITERIA].empty_table())
            rows = connection.execute(_query(folder, tables_dir / CRITERIA)).fetchall()
    except duckdb.Error as exc:  # e.g. tables written by a version before a column existed
        return History({}, 0, [f"the history under {folder} could not be read ({exc}); every row bounded by limits"])
    found: dict[Key, Observed] = {(row[0], row[1], row[2], row[3]): _observed(row[4], row[6:]) for row in rows}
    return History(found, len({run for row in rows for run in row[5]}), [])


def _observed(count: int, statistics: tuple[float | None, ...]) -> Observed:
    medians, p90s = statistics[: len(PARTS)], statistics[len(PARTS) :]
    return Observed(
        count,
        Figures.of(dict(zip(PARTS, medians, strict=True))),
        Figures.of(dict(zip(PARTS, p90s, strict=True))),
    )


def _has_files(folder: Path) -> bool:
    return any(folder.glob("**/*.parquet"))


def _read(folder: Path) -> str:
    return f"read_parquet({duckdb_source(folder)}, hive_partitioning = true, union_by_name = true)"


def _query(folder: Path, criteria: Path) -> str:
    """One line per wanted row-task with history: its key, count, runs, the median of each part, then each p90.

    The reused verdicts (few rows) are summed per evaluation first, then added to its judges' tokens and cost.
    """
    tokens = ", ".join(f"{sql} AS {name}" for name, sql in _TOKENS.items())
    costs = ", ".join(
        f"CASE WHEN {used} = 0 THEN coalesce({column}, 0) WHEN {_FLOOR.get(name, 'false')} THEN NULL ELSE {column} END"
        f" AS {name}"
        for name, (column, used) in _COSTS.items()
    )
    statistics = [f"median({part})" for part in PARTS] + [f"quantile_cont({part}, {P90})" for part in PARTS]
    return f"""
WITH reused_verdicts AS (
    SELECT run_id, variant_id, task_id, replicate,
           sum(coalesce(judge_usage.input_tokens, 0) + coalesce(judge_usage.output_tokens, 0)) AS reused_judge_tokens,
           sum(judge_usage.cost_usd) AS reused_judge_usd,
           bool_or(judge_usage.cost_usd IS NULL OR judge_usage.cost_source = 'unknown') AS reused_judge_unpriced
    FROM {_read(criteria) if _has_files(criteria) else NO_CRITERIA}
    WHERE reused
    GROUP BY run_id, variant_id, task_id, replicate
), picked AS (
    SELECT t.variant_id, t.task_id, t.agent_type, t.agent_model, t.run_id, t.duration_s, t.cost_usd,
           t.judge_cost_usd + coalesce(r.reused_judge_usd, 0) AS judge_cost_usd, r.reused_judge_unpriced,
           t.simulator_cost_usd, t.cost_complete, t.cost_source, t.final_status, {tokens},
           row_number() OVER (
               PARTITION BY t.variant_id, t.task_id, t.agent_type, t.agent_model ORDER BY t.run_ts DESC
           ) AS recency
    FROM {_read(folder)} AS t
    JOIN wanted AS w ON t.variant_id = w.variant_id AND t.task_id = w.task_id AND t.agent_type = w.agent_type
                    AND t.agent_model IS NOT DISTINCT FROM w.agent_model
    LEFT JOIN reused_verdicts AS r ON t.run_id = r.run_id AND t.variant_id = r.variant_id AND t.task_id = r.task_id
                         AND t.replicate IS NOT DISTINCT FROM r.replicate
    WHERE t.final_status <> 'ERROR'
), parts AS (
    SELECT *, {costs} FROM picked WHERE recency <= {HISTORY_DEPTH}
)
SELECT variant_id, task_id, agent_type, agent_model, count(*), list(DISTINCT run_id), {", ".join(statistics)}
FROM parts
GROUP BY variant_id, task_id, agent_type, agent_model
"""
