"""`coder-eval prune`: old runs out of the Dagster instance and the runs folder together.

A run's folder (its sandboxes, reports, task.json files) and its Dagster run
(its record and every event, asset materializations included) go together,
by the same cutoff; runs still going are never touched, nor the Dagster runs
of another runs dir on the same instance. The Parquet tables are the history
`coder-eval history` and analysts read: they are kept whole. The runs index
is written again; the newest run (``latest``) stays.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from . import exit_codes
from .cli_options import MAX_DAYS, folder_problem, given_path

if TYPE_CHECKING:
    import dagster as dg


def cmd_prune(args: argparse.Namespace) -> int:
    from .core.retention import old_run_folders, remove_run_folders
    from .launch import local_home, local_instance
    from .storage import FastSqliteEventLogStorage

    if what := folder_problem(args.runs_dir):  # a mistyped --runs-dir would prune nothing, and say it did
        print(f"coder-eval prune: --runs-dir {args.runs_dir}: {what} (the runs folder to prune)", file=sys.stderr)
        return exit_codes.USAGE
    if not (home := local_home()).joinpath("dagster.yaml").is_file():  # a mistyped DAGSTER_HOME: a new, empty one
        print(
            f"coder-eval prune: {home} holds no Dagster instance (no dagster.yaml; DAGSTER_HOME, else ./.dagster): "
            "its runs would stay while their folders went; check DAGSTER_HOME",
            file=sys.stderr,
        )
        return exit_codes.USAGE
    before: datetime = args.before or datetime.now(UTC) - timedelta(days=args.keep_days)
    with local_instance() as instance:
        unfinished = unfinished_folders(instance)
        old = old_run_folders(args.runs_dir, before)
        folders = [folder for folder in old if not still_going(folder, unfinished)]
        runs = old_runs(instance, before, args.runs_dir, kept_folders(args.runs_dir, folders), folders)
        if args.dry_run:
            print(f"would prune {len(folders)} run folder(s) and {len(runs)} Dagster run(s) started before {before}")
            print("".join(f"  {folder}\n" for folder in folders), end="")
            return exit_codes.OK
        pruned = remove_run_folders(args.runs_dir, folders)
        for run_id in runs:
            instance.delete_run(run_id)
        delete_check_executions(instance, runs)
        if runs:  # the UI's partition counts, cached from the events: built again from those left on its next look
            instance.wipe_asset_cached_status(list(instance.all_asset_keys()))
        if runs and isinstance(instance.event_log_storage, FastSqliteEventLogStorage):
            instance.event_log_storage.vacuum_index()
    print(
        f"pruned {len(folders)} run folder(s) ({pruned.bytes_freed / 2**20:.1f} MiB) and {len(runs)} Dagster run(s) "
        f"started before {before:%Y-%m-%d %H:%M:%S} UTC; the tables keep their history"
    )
    return exit_codes.OK


ENDED = ("SUCCESS", "FAILURE", "CANCELED")
BACKFILL_GOING = ("REQUESTED", "CANCELING", "FAILING")
RECENT_BACKFILLS = 200  # the newest first: a backfill still going is among them


def unfinished_folders(instance: dg.DagsterInstance) -> set[str]:
    """The names of the run folders of the Dagster runs that have not ended."""
    import dagster as dg

    from .defs.names import BACKFILL_TAG
    from .defs.resources import folder_name_of

    going = dg.RunsFilter(statuses=[status for status in dg.DagsterRunStatus if status.value not in ENDED])
    folders = {folder_name_of(instance, run.run_id, run.tags) for run in instance.get_runs(filters=going)}
    # A backfill between its runs (its chunks done, its suite_metrics run not yet launched) has none going.
    backfills = [b for b in instance.get_backfills(limit=RECENT_BACKFILLS) if b.status.value in BACKFILL_GOING]
    return folders | {folder_name_of(instance, "", {BACKFILL_TAG: backfill.backfill_id}) for backfill in backfills}


def still_going(folder: Path, unfinished: set[str]) -> bool:
    """Whether a run is still writing the folder: a Dagster run of it has not ended, or a CLI process holds its work
    lock (``run_lock``: a run, also between a sequential A/B's batches, a resume, a retry or a rescore)."""
    from .core.run_lock import in_use

    return folder.name in unfinished or in_use(folder)


def kept_folders(runs_dir: Path, pruned: list[Path]) -> set[str]:
    """The names of the run folders that stay."""
    gone = {folder.name for folder in pruned}
    return {p.name for p in runs_dir.iterdir() if p.is_dir() and p.name not in gone} if runs_dir.is_dir() else set()


def old_runs(
    instance: dg.DagsterInstance, before: datetime, runs_dir: Path, kept: set[str], pruned: list[Path]
) -> list[str]:
    """The ids of this runs dir's ended runs whose folder does not stay: those created before ``before`` (a folder
    is judged by its run's start, its Dagster runs by their creation, and a backfill's runs are created before its
    folder starts; the two go together), and every run of a folder pruned now (a later resume, retry or rescore of
    it). The runs of another runs dir on the same instance stay."""
    import dagster as dg

    from .defs.resources import run_folder_of

    ended = [dg.DagsterRunStatus(status) for status in ENDED]
    records = instance.get_run_records(filters=dg.RunsFilter(statuses=ended))
    here, now_pruned = runs_dir.resolve(), {folder.name for folder in pruned}
    return [
        record.dagster_run.run_id
        for record in records
        if (folder := run_folder_of(instance, record.dagster_run)).parent.resolve() == here
        and folder.name not in kept
        and (record.create_timestamp < before or folder.name in now_pruned)
    ]


def delete_check_executions(instance: dg.DagsterInstance, run_ids: list[str]) -> None:
    """The asset check results of the deleted runs: Dagster's delete_run leaves them, pointing at runs that are
    gone (the check's history in the UI lists them)."""
    # Private (pinned: dagster 1.13.27): the event log's check table, guarded by tests/system/test_prune.py
    # (docs/operations.md, "Dagster's private internals").
    from dagster._core.storage.event_log.schema import AssetCheckExecutionsTable
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

    storage = instance.event_log_storage
    if not run_ids or not isinstance(storage, SqlEventLogStorage):
        return
    with storage.index_connection() as connection:
        connection.execute(AssetCheckExecutionsTable.delete().where(AssetCheckExecutionsTable.c.run_id.in_(run_ids)))


def _utc_time(text: str) -> datetime:
    """An argparse type: an ISO time, UTC unless it says otherwise."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an ISO time such as 2026-12-01T00:00:00Z, got {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _days(text: str) -> float:
    try:
        days = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of days, got {text!r}") from None
    if days < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {text}")
    if not days <= MAX_DAYS:  # nan and inf too: no cutoff date is that far back
        raise argparse.ArgumentTypeError(f"must be at most {MAX_DAYS} (days), got {text}")
    return days


Parser = TypeVar("Parser", bound=argparse.ArgumentParser)  # the CLI's own parser class


def add_commands(subparsers: argparse._SubParsersAction[Parser]) -> None:
    prune = subparsers.add_parser(
        "prune", help="remove old runs from the Dagster instance and the runs folder (the tables keep them)"
    )
    when = prune.add_mutually_exclusive_group(required=True)
    when.add_argument("--keep-days", type=_days, metavar="N", help="keep the runs of the last N days")
    when.add_argument("--before", type=_utc_time, metavar="TIME", help="prune the runs started before TIME (ISO)")
    prune.add_argument(
        "--runs-dir", type=given_path, default=Path("runs"), help="where run folders are (default runs/)"
    )
    prune.add_argument("--dry-run", action="store_true", help="say what would be pruned, prune nothing")
    prune.set_defaults(handler=cmd_prune)
