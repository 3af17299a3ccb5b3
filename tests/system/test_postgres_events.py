"""coder-eval's PostgreSQL event storage, as docs/operations.md configures it, through the installed CLI.

A run over N partitions stores one planned event per asset, not one per
partition and asset, and opens a few connections, not one per storage call
(what made a 1,000-row run take ~60 s on Dagster's own storages); what it
stores reads back through Dagster's own PostgreSQL storage, in a process
with no coder-eval module loaded.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from coder_eval_dagster.storage_postgres import STORAGES_YAML

from ..support.helpers import agentless_task, write, write_task
from ..support.postgres_server import DAGSTER_STORAGES_YAML, new_database, running_postgres
from .conftest import SystemCli

pytestmark = pytest.mark.slow

ROWS = 4
ASSETS = ("resolved_tasks", "sandbox_runs", "criteria_scores")


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    with running_postgres() as url:
        yield url


# Dagster's own storages (its shorthand), and coder-eval's, as docs/operations.md configures them.
CONFIGURATIONS = {"dagster": DAGSTER_STORAGES_YAML, "ours": STORAGES_YAML}


def _task(folder: Path) -> Path:
    return write_task(
        folder,
        agentless_task(
            task_id="pg",
            sandbox={"python": None},
            dataset={"rows": [{"id": f"r{i}"} for i in range(ROWS)]},
            success_criteria=[{"type": "run_command", "command": "true", "description": "runs"}],
        ),
    )


def _rows(url: str, query: str, **parameters: str) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        rows = [tuple(row) for row in connection.execute(sa.text(query), parameters)]
    engine.dispose()
    return rows


def _scalar(url: str, query: str, **parameters: str) -> int:
    ((value,),) = _rows(url, query, **parameters)
    return int(value)


# Connections ever opened to a database (PostgreSQL counts them; an ended process's are counted).
SESSIONS = "SELECT sessions FROM pg_stat_database WHERE datname = :name"
PLANNED_EVENTS = "SELECT count(*) FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION_PLANNED'"
# What a step's batch of materializations leaves, beyond the events: each materialization's indexed tags (a row-task
# and a variant, for the partitioned assets), and whether each asset's row points at its latest event (which
# partition that is depends on the order Dagster gave the batch, not the same in two processes).
STORED = {
    "materializations": "SELECT asset_key, count(*) FROM event_logs"
    " WHERE dagster_event_type = 'ASSET_MATERIALIZATION' GROUP BY asset_key ORDER BY asset_key",
    "tags": "SELECT t.asset_key, t.key, t.value, e.partition FROM asset_event_tags t JOIN event_logs e ON e.id = t.event_id"
    " WHERE t.asset_key = e.asset_key AND t.event_timestamp = e.timestamp AND starts_with(t.key, 'dagster/partition/')"
    " ORDER BY 1, 2, 3, 4",
    "latest": "SELECT k.asset_key, (k.last_materialization::json ->> 'storage_id')::int = max(e.id) FROM asset_keys k"
    " JOIN event_logs e ON e.asset_key = k.asset_key AND e.dagster_event_type = 'ASSET_MATERIALIZATION'"
    " GROUP BY k.asset_key, k.last_materialization ORDER BY 1",
}


# Dagster's own storage (`storage: postgres:`), in a process of its own: the run's status, then each asset's
# materialized partitions, one line each.
STOCK_READ = """
import sys
import dagster as dg
with dg.DagsterInstance.from_config(sys.argv[1]) as instance:
    assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
    assert "coder_eval_dagster" not in sys.modules
    print(instance.get_run_by_id(sys.argv[2]).status.value)
    for asset in sys.argv[3:]:
        print(" ".join(sorted(instance.get_materialized_partitions(dg.AssetKey(asset)))))
"""


def test_a_ranged_run_on_postgres_plans_once_per_asset_on_kept_connections(tmp_path: Path, postgres_url: str) -> None:
    counts, sessions, stored = {}, {}, {}
    for name, configuration in CONFIGURATIONS.items():
        url = new_database(postgres_url, name)
        cli = SystemCli(tmp_path / name)
        write(cli.home / "dagster.yaml", configuration.format(url=url))
        outcome, run = cli.run(_task(tmp_path / name / "task"), env={}, timeout=300)
        assert outcome.code == 0, outcome.output
        sessions[name] = _scalar(postgres_url, SESSIONS, name=name)
        counts[name] = _scalar(url, PLANNED_EVENTS)
        stored[name] = {what: _rows(url, query) for what, query in STORED.items()}
    # the partitioned assets: one planned event each instead of one per row (the run's other assets plan one each)
    assert counts["dagster"] - counts["ours"] == len(ASSETS) * (ROWS - 1), counts
    # a connection kept by each storage, not one opened per call (Dagster's: ~200 for a one-row run)
    assert sessions["ours"] * 5 < sessions["dagster"], sessions
    # the materializations, their tags (each tied to its event) and the assets' latest events: stored alike
    assert stored["ours"] == stored["dagster"]
    assert len(stored["ours"]["tags"]) == 2 * len(ASSETS) * ROWS

    stock = tmp_path / "stock_home"
    write(stock / "dagster.yaml", CONFIGURATIONS["dagster"].format(url=url))
    done = subprocess.run(
        [sys.executable, "-c", STOCK_READ, str(stock), run.summary["dagster_run_id"], *ASSETS],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    status, *partitions = done.stdout.splitlines()
    assert status == "SUCCESS"
    assert partitions == [" ".join(f"pg/r{i}|default" for i in range(ROWS))] * len(ASSETS)


def test_the_documented_configuration_is_the_one_tested() -> None:
    operations = (Path(__file__).parents[2] / "docs" / "operations.md").read_text(encoding="utf-8")
    assert STORAGES_YAML.format(url="postgresql+psycopg2://USER:PASSWORD@HOST:5432/DBNAME") in operations
