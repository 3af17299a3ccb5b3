"""Every use of Dagster's private internals, in one place (pinned: dagster 1.13.27).

Each exists for a measured gain or has no public equivalent; each is guarded
by the end-to-end tests (tests/test_end_to_end.py, tests/test_operations.py),
which fail if the internals move.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

# The range tags that select a rectangle of partitions. dagster-open-platform
# imports them from the same module; their values are stable strings.
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

__all__ = ["ASSET_PARTITION_RANGE_END_TAG", "ASSET_PARTITION_RANGE_START_TAG", "add_partition_metadata"]


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

        current = step._metadata_accumulator.per_output_metadata
        added = {
            AssetMetadataHandle(asset_key=step.assets_def.key, partition_key=key): value
            for key, value in metadata.items()
        }
        step._metadata_accumulator = OutputMetadataAccumulator(per_output_metadata={**current, **added})
    except (ImportError, AttributeError, TypeError):
        for key, value in metadata.items():
            step.add_asset_metadata(value, partition_key=key)
