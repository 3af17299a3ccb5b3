"""What a multi-container deployment requires of the Dagster instance."""

from __future__ import annotations

import dagster as dg

# Launchers that run each run on the same machine, in a process that reaches the instance's files.
LOCAL_LAUNCHERS = ("DefaultRunLauncher",)


def refuse_sqlite_across_containers(instance: dg.DagsterInstance) -> None:
    """Fail the step when runs are launched elsewhere (a container, a pod) but the instance is SQLite.

    Each run container would open its own copy of the SQLite files (or a
    shared file that SQLite cannot lock across hosts): runs, events and
    partitions would be lost or corrupted. PostgreSQL is the storage there.
    """
    launcher = type(instance.run_launcher).__name__
    storages = (instance.run_storage, instance.event_log_storage, instance.schedule_storage)
    sqlite = [type(s).__name__ for s in storages if s is not None and "sqlite" in type(s).__name__.lower()]
    if launcher not in LOCAL_LAUNCHERS and sqlite:
        raise dg.Failure(
            description=f"the run launcher {launcher} starts runs in other containers, but the instance stores "
            f"in SQLite ({', '.join(sqlite)}): configure `storage: postgres:` in dagster.yaml (docs/deploy.md)"
        )
