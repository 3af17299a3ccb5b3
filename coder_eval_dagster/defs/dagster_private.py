"""The definitions layer's uses of Dagster's private internals, in one place (pinned: dagster 1.13.27).

Each exists for a measured gain or has no public equivalent; each is guarded
by tests/dagster/test_operations.py and tests/dagster/test_dev_command.py,
which fail if the internals move. The instance's own uses are where they
work: storage.py and storage_postgres.py (the storages), prune_cli.py (the
check results of pruned runs); docs/operations.md ("Dagster's private
internals") lists every one with its guard.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import dagster as dg

# The range tags that select a rectangle of partitions. dagster-open-platform
# imports them from the same module; their values are stable strings.
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

if TYPE_CHECKING:
    from dagster._core.execution.context.metadata_logging import OutputMetadataHandle

__all__ = [
    "ASSET_PARTITION_RANGE_END_TAG",
    "ASSET_PARTITION_RANGE_START_TAG",
    "EVENT_BATCH_SIZE",
    "add_partition_metadata",
    "report_materializations",
]

# DAGSTER_EVENT_BATCH_SIZE, undocumented: the events a step (and report_materializations) hands the storage at once,
# which stores a batch in one transaction (storage.py); unset or 0: one at a time.
EVENT_BATCH_SIZE = "1000"


def add_partition_metadata(context: dg.AssetExecutionContext, metadata: dict[Any, dict[str, Any]]) -> None:
    """Metadata for each partition's materialization event, handed over once per step.

    The public ``add_asset_metadata(partition_key=...)`` re-reads every dynamic
    partition from the instance to validate each key, and every call copies the
    step's whole metadata map: a run over N partitions paid O(N^2) (1,000 rows:
    several seconds). Our keys come from ``context.partition_keys``, so the
    step's accumulator gets them in one update; if those internals ever move,
    the public call is used.
    """
    step = context.op_execution_context.get_step_execution_context()
    try:
        from dagster._core.execution.context.metadata_logging import AssetMetadataHandle, OutputMetadataAccumulator

        assets_def = step.assets_def
        if assets_def is None:  # not an asset step: the public call below reports it
            raise AttributeError("assets_def")
        current = step._metadata_accumulator.per_output_metadata
        added: dict[OutputMetadataHandle | AssetMetadataHandle, Mapping[str, Any]] = {
            AssetMetadataHandle(asset_key=assets_def.key, partition_key=key): value for key, value in metadata.items()
        }
        step._metadata_accumulator = OutputMetadataAccumulator(per_output_metadata={**current, **added})
    except (ImportError, AttributeError, TypeError):
        for key, value in metadata.items():
            step.add_asset_metadata(value, partition_key=key)


def report_materializations(instance: dg.DagsterInstance, materializations: list[dg.AssetMaterialization]) -> None:
    """Record runless materializations, as ``report_runless_asset_event`` does, handed to the storage in batches.

    The public call stores each event in its own transactions: about 9 ms an
    event here, 18 s for 2,000 row-tasks. Handed over with Dagster's batch
    metadata (the path a step's per-partition events take), our event log
    stores each batch in one transaction. If those internals move, the public
    call is used.
    """
    try:
        from dagster._core.events import DagsterEventBatchMetadata, StepMaterializationData
        from dagster._core.instance.utils import RUNLESS_JOB_NAME, RUNLESS_RUN_ID
    except ImportError:
        for materialization in materializations:
            instance.report_runless_asset_event(materialization)
        return
    os.environ.setdefault("DAGSTER_EVENT_BATCH_SIZE", EVENT_BATCH_SIZE)  # as launch.execute
    batch, last = uuid.uuid4().hex, len(materializations) - 1
    for index, materialization in enumerate(materializations):
        event = dg.DagsterEvent(
            event_type_value=dg.DagsterEventType.ASSET_MATERIALIZATION.value,
            job_name=RUNLESS_JOB_NAME,
            event_specific_data=StepMaterializationData(materialization),
        )
        instance.report_dagster_event(
            event, run_id=RUNLESS_RUN_ID, batch_metadata=DagsterEventBatchMetadata(batch, index == last)
        )
