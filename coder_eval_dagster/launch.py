"""Launch the asset graph in-process on the user's Dagster instance (for the CLI).

A run covers a rectangle of partitions: the run's row-tasks x its variants.
Dagster selects a rectangle by the insertion order of the dynamic keys, so
the run's keys are first made a contiguous block in each dimension (keys
already in one block are left alone; otherwise they are re-added at the
end, which keeps their materialization history).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import dagster as dg
import sqlalchemy.exc

from .core.fingerprints import fingerprints, resolution_digest
from .core.places import dagster_home
from .core.problems import InvalidInput
from .core.resolution import Resolution, RowTask, definitions_metadata
from .core.run_context import RunContext
from .core.run_lock import exclusively, process_alive
from .core.run_spec import RunSpec
from .definitions import build_definitions
from .defs.assets import ASSETS, resolved_metadata
from .defs.dagster_private import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    report_materializations,
)
from .defs.dagster_private import EVENT_BATCH_SIZE as EVENT_BATCH_SIZE  # re-exported: cli_run's dev sets it too
from .defs.names import (
    HOST_TAG,
    JOB_NAME,
    MODE_TAG,
    PARTITIONS_TAG,
    PID_NAMESPACE_TAG,
    PID_RUN_TAG,
    PID_TAG,
    RESCORED_ASSETS,
    RESOLVED_TASKS,
    RUN_DIR_TAG,
    TASK_DEFINITIONS,
)
from .defs.partitions import (
    TASK_DIMENSION,
    VARIANT_DIMENSION,
    encode_id,
    keys_digest,
    partition_key,
    row_task_partitions,
)
from .defs.resources import CoderEvalSettings, process_tags
from .storage import HOME_DATABASES, INSTANCE_YAML, copy_template

if TYPE_CHECKING:
    from dagster_shared.error import SerializableErrorInfo


def quiet_logs() -> dict[str, Any]:
    """Dagster's console logger for a CLI run: silent, since the CLI says in one line each what failed (a step's
    failure, an interrupt) and Dagster's ERROR lines carry stack traces; CODER_EVAL_DEBUG=1 shows them."""
    level = "ERROR" if os.environ.get("CODER_EVAL_DEBUG") else "CRITICAL"
    return {"loggers": {"console": {"config": {"log_level": level}}}}


def local_home() -> Path:
    """The Dagster home (``places.dagster_home``), resolved: the one instance the CLI and `coder-eval dev` share."""
    return dagster_home().resolve()


def write_instance_defaults(home: Path) -> bool:
    """Give ``home`` our dagster.yaml (and pre-migrated databases) unless it has a dagster.yaml; whether it did."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if config.exists():
        return False
    for name, where in HOME_DATABASES.items():  # pre-migrated: a first run skips creating the schema
        copy_template(name, home / where)
    config.write_text(INSTANCE_YAML.format(base=home), encoding="utf-8")
    return True


def local_instance() -> dg.DagsterInstance:
    """``local_home()``, given our defaults when it has no dagster.yaml."""
    home = local_home()
    write_instance_defaults(home)
    warn_storage_elsewhere(home)
    instance = dg.DagsterInstance.from_config(str(home))
    fail_orphaned_runs(instance)
    free_slots_of_ended_runs(instance)  # (theirs too, now that they ended)
    return instance


STORAGES = ("run_storage", "event_log_storage", "schedule_storage")


class InstanceConfigInvalid(Exception):
    """The instance's dagster.yaml cannot be read (one line naming the file and line: the CLI's exit 2)."""


def storage_elsewhere(home: Path) -> Path | None:
    """A storage folder ``home``'s dagster.yaml names outside ``home``, if any (relative paths are Dagster's: from
    the current folder). Dagster's config cannot name a folder under the home (``{env: DAGSTER_HOME}`` is the home
    itself), so the file coder-eval writes holds absolute paths: a home copied or moved uses the original's."""
    import yaml

    path = home / "dagster.yaml"
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:  # the user's file: said at its line, as a task file's problem is
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InstanceConfigInvalid(f"{where}: YAML syntax error: {problem}") from None
    if not isinstance(config, dict):
        return None
    sections = [_mapping(_mapping(config.get(name)).get("config")) for name in STORAGES]
    sections.append(_mapping(_mapping(config.get("storage")).get("sqlite")))
    bases = [section.get("base_dir") for section in sections]
    folders = [Path(base).resolve() for base in bases if isinstance(base, str)]
    return next((folder for folder in folders if not folder.is_relative_to(home.resolve())), None)


def _mapping(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def warn_storage_elsewhere(home: Path) -> None:
    """One line when the instance the commands open is not the home's own (``storage_elsewhere``)."""
    elsewhere = storage_elsewhere(home)
    if elsewhere is not None:
        print(
            f"warning: {home / 'dagster.yaml'} stores the instance in {elsewhere}, outside {home} (a copied or "
            "moved home?): the commands use that instance; move the file aside, then `coder-eval instance init` "
            "writes its own",
            file=sys.stderr,
        )


def fail_orphaned_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark the runs of this machine left STARTED by a process that died (kill -9, power loss) as failed: a CLI
    run's process, a launched run's worker (`coder-eval dev` killed). Only where that process's pid means the
    same process as here: a run in a container on the host's network names this machine too."""
    ours = process_tags("")
    started = instance.get_runs(
        filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED], tags={HOST_TAG: ours[HOST_TAG]})
    )
    namespace = ours[PID_NAMESPACE_TAG]
    here = [
        run
        for run in started
        if run.tags.get(PID_NAMESPACE_TAG, namespace) == namespace
        and run.tags.get(PID_RUN_TAG, run.run_id) == run.run_id  # not a re-execution's copy of its parent's
    ]
    orphaned = [run for run in here if not process_alive(int(run.tags.get(PID_TAG, "0") or 0))]
    for run in orphaned:
        instance.report_run_failed(run, "the process running it died (a CLI run: finish it with --resume)")
    return [run.run_id for run in orphaned]


ENDED = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


def free_slots_of_ended_runs(instance: dg.DagsterInstance) -> None:
    """Give back the pool slots (``agent_api``) that runs which ended still hold: a process killed mid-step never
    frees its own, and with no daemon freeing them (Dagster's run monitoring does, after
    ``free_slots_after_run_end_seconds``) four kill -9s left every later run waiting for a slot for ever."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return
    holders = storage.get_concurrency_run_ids()
    if not holders:
        return
    for record in instance.get_run_records(filters=dg.RunsFilter(run_ids=list(holders), statuses=list(ENDED))):
        storage.free_concurrency_slots_for_run(record.dagster_run.run_id)


# In the instance home: the CLI processes using it take turns at reading and changing its dynamic keys.
PARTITIONS_LOCK = ".coder-eval-partitions.lock"
COLLISION_ATTEMPTS = 5
T = TypeVar("T")


@contextmanager
def partitions_lock() -> Iterator[None]:
    """Hold the instance home's lock on its dynamic keys while this process reads and changes them.

    Runs started together on one DAGSTER_HOME read the keys at the same
    moment: each then added the same new keys (all but the first failed on
    the table's UNIQUE constraint) or moved keys another was arranging. Taking
    turns, a later run finds the keys the earlier one added in place.
    """
    with exclusively(local_home() / PARTITIONS_LOCK):
        yield


def retried_on_collision(change: Callable[[], T]) -> T:
    """``change`` again when a writer the lock does not cover (the file sensor; a process on another machine sharing
    a PostgreSQL instance) added one of its keys between Dagster's check for them and its insert: read again, the
    keys are there."""
    for _ in range(COLLISION_ATTEMPTS - 1):
        try:
            return change()
        except sqlalchemy.exc.IntegrityError:
            continue
    return change()


def contiguous_block(instance: dg.DagsterInstance, dimension: str, keys: list[str]) -> tuple[str, str]:
    """Make ``keys`` one contiguous block of the dimension; return its first and last key."""
    current = instance.get_dynamic_partitions(dimension)
    position = {key: index for index, key in enumerate(current)}
    found = sorted(position[k] for k in keys if k in position)
    if len(found) == len(keys) and found[-1] - found[0] + 1 == len(keys):
        return current[found[0]], current[found[-1]]
    for key in keys:
        if key in position:
            instance.delete_dynamic_partition(dimension, key)
    instance.add_dynamic_partitions(dimension, keys)
    return keys[0], keys[-1]


def register_partitions(instance: dg.DagsterInstance, row_tasks: list[RowTask]) -> int:
    """Add the row-tasks' task and variant keys the instance does not have yet; how many were new."""
    dimensions = (
        (TASK_DIMENSION, [rt.task_id for rt in row_tasks]),
        (VARIANT_DIMENSION, [rt.variant_id for rt in row_tasks]),
    )
    with partitions_lock():
        return sum(
            retried_on_collision(partial(add_missing, instance, dimension, [encode_id(i) for i in ids]))
            for dimension, ids in dimensions
        )


def add_missing(instance: dg.DagsterInstance, dimension: str, keys: list[str]) -> int:
    """Add the keys the dimension does not have yet, in order; how many."""
    known = set(instance.get_dynamic_partitions(dimension))
    new = [key for key in dict.fromkeys(keys) if key not in known]
    if new:
        instance.add_dynamic_partitions(dimension, new)
    return len(new)


# Dagster's tags for a reported data version (its REST endpoint for external asset events sets the same).
DATA_VERSION_TAG = "dagster/data_version"
DATA_VERSION_IS_USER_PROVIDED_TAG = "dagster/data_version_is_user_provided"
RECORDED_BY = "coder-eval register"
REGISTERED_DESCRIPTION = f"Resolved by {RECORDED_BY}, outside any run."


def record_resolution(instance: dg.DagsterInstance, resolution: Resolution, spec: RunSpec) -> int:
    """Record what `coder-eval register` resolved as materializations of task_definitions and resolved_tasks.

    Before launching an asset, Dagster's UI asks whether each upstream asset
    was ever materialized and, if not, warns that the launch may fail. These
    runless events leave the graph as a run of the two assets would: the
    data versions are the files' digest and each row-task's fingerprint.
    When the files changed, every registered partition is recorded; when
    not, only the partitions never materialized, so registering again adds
    nothing and keeps a real run's events. How many partitions were recorded.
    """
    prints = fingerprints(resolution.row_tasks)
    version = resolution_digest(prints)
    unchanged = version in recorded_versions(instance)
    row_tasks = never_materialized(instance, resolution.row_tasks) if unchanged else resolution.row_tasks
    events = [] if unchanged else [_definitions_event(resolution, spec, version)]
    events += [_resolved_event(rt, prints[(rt.task_id, rt.variant_id)]) for rt in row_tasks]
    report_materializations(instance, events)
    return len(row_tasks)


REGISTERED_LOOKBACK = 1000  # task_definitions events searched for register's last (a run records one each)


def recorded_versions(instance: dg.DagsterInstance) -> set[str | None]:
    """The files' digests the graph now stands for: the latest task_definitions event's (a run's or a
    register's), and the one `register` last recorded (a run of another selection, one task file of the folder,
    writes its own digest after it)."""
    records = instance.fetch_materializations(TASK_DEFINITIONS, limit=REGISTERED_LOOKBACK).records
    materializations = [record.asset_materialization for record in records if record.asset_materialization]
    registered = [m for m in materializations if (m.description or "").startswith(REGISTERED_DESCRIPTION)]
    return {(m.tags or {}).get(DATA_VERSION_TAG) for m in [*materializations[:1], *registered[:1]]}


def never_materialized(instance: dg.DagsterInstance, row_tasks: list[RowTask]) -> list[RowTask]:
    """The row-tasks whose resolved_tasks partition has no materialization (by a run or an earlier register)."""
    keys = [str(partition_key(rt.task_id, rt.variant_id)) for rt in row_tasks]
    status = instance.get_status_by_partition(RESOLVED_TASKS, keys, row_task_partitions) or {}
    return [rt for rt, key in zip(row_tasks, keys, strict=True) if status.get(key) is None]


def _recorded(version: str) -> dict[str, str]:
    return {DATA_VERSION_TAG: version, DATA_VERSION_IS_USER_PROVIDED_TAG: "true"}


def _definitions_event(resolution: Resolution, spec: RunSpec, version: str) -> dg.AssetMaterialization:
    experiment = resolution.experiment.model.experiment_id if resolution.experiment else ""
    return dg.AssetMaterialization(
        TASK_DEFINITIONS,
        description=REGISTERED_DESCRIPTION,
        metadata={
            **definitions_metadata(spec.task_paths, resolution.row_tasks, resolution.skipped),
            "experiment": experiment,
            "recorded_by": RECORDED_BY,
        },
        tags=_recorded(version),
    )


def _resolved_event(row_task: RowTask, fingerprint: str) -> dg.AssetMaterialization:
    key = partition_key(row_task.task_id, row_task.variant_id)
    return dg.AssetMaterialization(
        RESOLVED_TASKS,
        description=REGISTERED_DESCRIPTION,
        partition=key,
        metadata={**resolved_metadata(row_task), "recorded_by": RECORDED_BY},
        # the dimension tags a run puts on a multi-partition materialization
        tags={**_recorded(fingerprint), **{f"dagster/partition/{d}": k for d, k in key.keys_by_dimension.items()}},
    )


def range_tags(instance: dg.DagsterInstance, task_ids: list[str], variant_ids: list[str]) -> dict[str, str]:
    task_keys, variant_keys = [encode_id(t) for t in task_ids], [encode_id(v) for v in variant_ids]
    with partitions_lock():
        first_task, last_task = retried_on_collision(partial(contiguous_block, instance, TASK_DIMENSION, task_keys))
        first_variant, last_variant = retried_on_collision(
            partial(contiguous_block, instance, VARIANT_DIMENSION, variant_keys)
        )
    start = dg.MultiPartitionKey({TASK_DIMENSION: first_task, VARIANT_DIMENSION: first_variant})
    end = dg.MultiPartitionKey({TASK_DIMENSION: last_task, VARIANT_DIMENSION: last_variant})
    return {ASSET_PARTITION_RANGE_START_TAG: str(start), ASSET_PARTITION_RANGE_END_TAG: str(end)}


def execute(
    instance: dg.DagsterInstance,
    settings: CoderEvalSettings,
    run_context: RunContext,
    task_ids: list[str],
    variant_ids: list[str],
    run_id: str,
    rescore: bool = False,
) -> dg.ExecuteInProcessResult:
    """One in-process run of the graph (or, to rescore, of criteria_scores and suite_metrics)."""
    tags = {
        RUN_DIR_TAG: str(Path(settings.run_dir).absolute()) if settings.run_dir else "",  # (read from anywhere)
        MODE_TAG: "rescore" if rescore else "run",
        **process_tags(run_id),
    }
    tags |= range_tags(instance, task_ids, variant_ids)
    tags[PARTITIONS_TAG] = keys_digest((task, variant) for task in task_ids for variant in variant_ids)
    selection = RESCORED_ASSETS if rescore else [a.key for a in ASSETS]
    # Hand each asset's per-partition events to the storage as one batch
    # (FastSqliteEventLogStorage stores a batch in one transaction).
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", EVENT_BATCH_SIZE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (
            build_definitions(settings, run_context)
            .resolve_job_def(JOB_NAME)
            .execute_in_process(
                run_config=quiet_logs(),
                instance=instance,
                run_id=run_id,
                tags=tags,
                asset_selection=selection,
                raise_on_error=False,
            )
        )


def failure_messages(result: dg.ExecuteInProcessResult) -> list[str]:
    return [f"{step_key}: {raised(error)}" for step_key, error in _step_errors(result)]


def refused_inputs(result: dg.ExecuteInProcessResult) -> list[str]:
    """What the failed steps refused as invalid input (a task.json that is no longer JSON, for a rescore), as the
    CLI prints a refusal: the file and why, without the error's class."""
    return [
        cause.message.partition(": ")[2].strip()
        for _, error in _step_errors(result)
        for cause in _causes(error)
        if cause.cls_name == InvalidInput.__name__
    ]


def interrupted(result: dg.ExecuteInProcessResult) -> bool:
    """Whether a step, or the run between steps (waiting for a pool slot: ``quiet_pool_waits``), failed because
    the run was interrupted: Dagster's own SIGINT handler raises in whichever step runs (the summary's too), where
    only the evaluations' steps raise the run's interrupt."""
    errors = [error for _, error in _step_errors(result)] + [_run_error(result)]
    return any(_is_interrupt(cause) for error in errors for cause in _causes(error))


def _run_error(result: dg.ExecuteInProcessResult) -> SerializableErrorInfo | None:
    """The run's own error, when it failed outside every step."""
    failure = next((event for event in result.all_events if event.is_run_failure), None)
    return failure.job_failure_data.error if failure is not None and failure.job_failure_data else None


INTERRUPTS = ("DagsterExecutionInterruptedError", "KeyboardInterrupt")


def _is_interrupt(cause: SerializableErrorInfo) -> bool:
    """The interrupt itself, or pydantic's wrapping of one raised in a computed field while it wrote the summary
    (``Error serializing to JSON: DagsterExecutionInterruptedError``: no cause kept)."""
    if cause.cls_name in INTERRUPTS:
        return True
    return cause.cls_name == "PydanticSerializationError" and any(name in cause.message for name in INTERRUPTS)


def _step_errors(result: dg.ExecuteInProcessResult) -> Iterator[tuple[str | None, SerializableErrorInfo]]:
    """Each failed step's key and error (the data of a failure is always there)."""
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data.error:
            yield event.step_key, event.step_failure_data.error


def _causes(error: SerializableErrorInfo | None) -> Iterator[SerializableErrorInfo]:
    """The error and every error behind it: its causes (``raise ... from``) and its contexts (raised while another
    was handled: an interrupt that lands while a lock is taken again surfaces as ``RuntimeError: release unlocked
    lock``, the interrupt only its context)."""
    pending = [error]
    while pending:
        current = pending.pop()
        if current is not None:
            yield current
            pending += [current.context, current.cause]


def raised(error: SerializableErrorInfo) -> str:
    """What the step's code raised (``OSError: [Errno 28] No space left on device: '...'``): Dagster wraps it in
    an error whose own message only names the op, and ends with a colon."""
    while error.cls_name == "DagsterExecutionStepExecutionError" and error.cause is not None:
        error = error.cause
    message = error.message.strip()
    failure = f"{dg.Failure.__module__}.{dg.Failure.__name__}: "  # a step's own refusal: its description says it all
    return message.removeprefix(failure) if error.cls_name == dg.Failure.__name__ else message
