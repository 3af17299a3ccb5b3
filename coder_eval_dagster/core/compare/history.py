"""``coder-eval history``: questions across runs, asked of the Parquet tables in place with DuckDB.

The three questions are SQL over two views, ``task_results`` and
``criteria_scores``; docs/analysts.md shows the same statements word for
word (a test checks it), so an analyst can paste them into a DuckDB shell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from ..layout import TABLES_DIR
from ..tables import duckdb_source, sql_literal
from .render import Block, Table
from .rows import CompareError

PASS_RATE_PER_DAY = """\
SELECT run_date, variant_id,
       count(*) AS evaluations,
       count(*) FILTER (WHERE final_status = 'ERROR') AS errors,
       avg(success::INTEGER) FILTER (WHERE final_status <> 'ERROR') AS pass_rate
FROM task_results
GROUP BY run_date, variant_id
ORDER BY run_date, variant_id;
"""

FAILING_CRITERIA = """\
SELECT base_task_id, criterion_index,
       min(description) FILTER (WHERE NOT passed) || CASE
           WHEN count(DISTINCT description) FILTER (WHERE NOT passed) > 1
           THEN ' (one of ' || count(DISTINCT description) FILTER (WHERE NOT passed) || ' texts, as rows filled it)'
           ELSE '' END AS description,
       count(*) FILTER (WHERE NOT passed) AS failures,
       count(*) AS evaluated,
       avg((NOT passed)::INTEGER) AS failure_rate
FROM criteria_scores
WHERE gating AND NOT advisory AND evaluation_status IS DISTINCT FROM 'not_evaluated'
GROUP BY base_task_id, criterion_index, criterion_type, CASE WHEN row_id IS NULL THEN description END
HAVING failures > 0
ORDER BY failures DESC, base_task_id, criterion_index
LIMIT 20;
"""

FLAKY_ROWS = """\
WITH per_run AS (
    SELECT variant_id, task_id, run_id, min(run_ts) AS run_ts,
           avg(success::INTEGER) > 0.5 AS passed,
           count(DISTINCT success) > 1 AS replicates_disagree
    FROM task_results
    WHERE final_status <> 'ERROR'
    GROUP BY variant_id, task_id, run_id
), sequenced AS (
    SELECT *, lag(passed) OVER (PARTITION BY variant_id, task_id ORDER BY run_ts) AS passed_before
    FROM per_run
)
SELECT variant_id, task_id, count(*) AS runs,
       count(*) FILTER (WHERE replicates_disagree) AS runs_with_disagreeing_replicates,
       count(*) FILTER (WHERE passed <> passed_before) AS flips_between_runs
FROM sequenced
GROUP BY variant_id, task_id
HAVING runs_with_disagreeing_replicates > 0 OR flips_between_runs > 0
ORDER BY runs_with_disagreeing_replicates + flips_between_runs DESC, variant_id, task_id;
"""

QUESTIONS = {
    "pass_rate_per_day": ("Pass rate per variant per day (ERROR excluded)", PASS_RATE_PER_DAY),
    "failing_criteria": ("The gating criteria that fail most", FAILING_CRITERIA),
    "flaky_rows": ("Flaky rows: replicates disagree, or the outcome flips between consecutive runs", FLAKY_ROWS),
}
VIEWED_TABLES = ("task_results", "criteria_scores")
# Columns the questions read that tables written by an earlier coder-eval lack (a run rewrites its files with them,
# null; a runs folder nobody ran in since has none): read as null there.
LATER_COLUMNS = {"criteria_scores": {"evaluation_status": "VARCHAR"}}


@dataclass
class History:
    runs_dir: Path
    answers: dict[str, pd.DataFrame]
    filters: list[str] = field(default_factory=list)  # the options that kept some rows only, as given

    def to_json(self) -> dict[str, Any]:
        """Records per question; days as ISO dates, missing values as null."""
        answers = {}
        for name, frame in self.answers.items():
            frame = frame.copy()
            if "run_date" in frame:
                frame["run_date"] = pd.to_datetime(frame["run_date"]).dt.date.astype(str)
            answers[name] = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
        return answers


def view_statement(tables_dir: Path, table: str, days: int | None, task_glob: str | None) -> str:
    """The view an analyst's query reads: one table's files, optionally the last ``days`` days and some tasks."""
    source = duckdb_source(tables_dir / table)
    filters = []
    if days is not None:
        today = datetime.now(UTC).date()  # run_date is the UTC day; DuckDB's current_date is the local one
        filters.append(f"run_date > DATE '{today.isoformat()}' - INTERVAL {int(days)} DAY")
    if task_glob:
        filters.append(f"task_id GLOB {sql_literal(task_glob)}")
    where = f" WHERE {' AND '.join(filters)}" if filters else ""
    return f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM read_parquet({source}, hive_partitioning = true){where};"


def _with_later_columns(connection: Any, table: str) -> None:
    """The view, with each column its files were written without added as null."""
    present = {row[0] for row in connection.execute(f"DESCRIBE {table}").fetchall()}
    missing = {name: kind for name, kind in LATER_COLUMNS.get(table, {}).items() if name not in present}
    if missing:
        added = ", ".join(f"NULL::{kind} AS {name}" for name, kind in missing.items())
        connection.execute(f"ALTER VIEW {table} RENAME TO {table}_as_written")
        connection.execute(f"CREATE VIEW {table} AS SELECT *, {added} FROM {table}_as_written")


def history(runs_dir: Path, days: int | None = None, task_glob: str | None = None) -> History:
    """The three answers over every run under ``runs_dir`` (its ``tables/`` folder)."""
    tables_dir = runs_dir / TABLES_DIR
    missing = [t for t in VIEWED_TABLES if not any((tables_dir / t).glob("**/*.parquet"))]
    if missing:
        raise CompareError(f"{runs_dir}: no {' or '.join(missing)} table under {tables_dir} (run coder-eval run first)")
    with duckdb.connect() as connection:
        try:
            for table in VIEWED_TABLES:
                connection.execute(view_statement(tables_dir, table, days, task_glob))
                _with_later_columns(connection, table)
            answers = {name: connection.execute(sql).df() for name, (_, sql) in QUESTIONS.items()}
        except duckdb.Error as exc:  # a damaged or foreign file among the tables: say which, not a traceback
            raise CompareError(f"{tables_dir}: a table file cannot be read: {str(exc).splitlines()[0]}") from None
    return History(runs_dir, answers, _filters(days, task_glob))


def _filters(days: int | None, task_glob: str | None) -> list[str]:
    filters = []
    if days is not None:
        filters.append(f"--days {days}")
    if task_glob:
        filters.append(f"--task {task_glob!r}")
    return filters


def _cell(value: Any) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value.date() if isinstance(value, pd.Timestamp) else value)


def history_blocks(result: History) -> list[Block]:
    tables = [
        Table(
            [str(c) for c in frame.columns],
            [[_cell(v) for v in row] for row in frame.itertuples(index=False)],
            QUESTIONS[name][0],
        )
        for name, frame in result.answers.items()
    ]
    return [Block(f"History of {result.runs_dir}", _no_rows_note(result), tables)]


def _no_rows_note(result: History) -> list[str]:
    """One line when the filters kept no row: every section's "none" is then theirs, not the runs'."""
    if not result.answers["pass_rate_per_day"].empty:
        return []
    matches = f" matches {' and '.join(result.filters)}" if result.filters else ""
    return [f"No row of the runs{matches}."]


def pass_rate_series(result: History) -> dict[str, list[tuple[Any, float]]]:
    frame = result.answers["pass_rate_per_day"].dropna(subset=["pass_rate"])
    return {
        str(variant): list(zip(group["run_date"], group["pass_rate"].astype(float), strict=True))
        for variant, group in frame.groupby("variant_id")
    }
