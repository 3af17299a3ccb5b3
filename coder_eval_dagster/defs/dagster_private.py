"""The definitions layer's uses of Dagster's private internals, in one place (pinned: dagster 1.13.27).

Each exists for a measured gain or has no public equivalent; each is guarded
by tests/dagster/test_operations.py and tests/dagster/test_dev_command.py,
which fail if the internals move. The instance's own uses are where they
work: storage.py and storage_postgres.py (the storages), prune_cli.py (the
check results of pruned runs); docs/operations.md ("Dagster's private
internals") lists every one with its guard.
"""

from __future__ import annotations

import logging
import os
import time
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
    "quiet_pool_waits",
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


POOL_WAIT_POLL_S = 0.2  # how often a step waiting for a pool slot looks for an interrupt
POOL_WAIT_NOTE = (
    "waiting for a slot of the Dagster pool agent_api: other runs hold them all, or its limit is 0"
    " (`dagster instance concurrency get agent_api` shows them; `dagster instance concurrency set agent_api N`"
    " changes the limit); Ctrl-C stops"
)
log = logging.getLogger(__name__)


def quiet_pool_waits() -> None:
    """A step waiting for a pool slot (``agent_api``) sleeps until its claim's next check, and hears an interrupt.

    Dagster 1.13.27's in-process executor asks for the wait until a pending
    claim's next check (1 s, growing to 15 s) and gets ``min(0, ...)``, never a
    wait (``InstanceConcurrencyContext.interval_to_next_pending_claim_check``):
    a run waiting for a slot spun a core until it got one (1.25 s of CPU
    every 2 s measured, and each run of a backfill past the pool's limit one
    more), and its loop never looked at the interrupt Dagster had captured, so
    Ctrl-C and SIGTERM waited for the slot too. The claims are still checked
    when Dagster checks them; the wait between is a sleep, cut by an interrupt
    (the run then fails as interrupted), and the wait is said once (it was
    silent: a pool at limit 0 held a run for good, saying nothing). Left as Dagster has them if these
    internals move. Applied once, in every process that runs the graph (the
    CLI's, a launched run's), by ``build_definitions``. Guard:
    tests/system/test_concurrent_runs.py.
    """
    try:
        from dagster._core.errors import DagsterExecutionInterruptedError
        from dagster._core.execution.plan.active import ActiveExecution
        from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext
        from dagster._utils.interrupts import check_captured_interrupt
    except ImportError:
        return
    if getattr(ActiveExecution.sleep_til_ready, "quiet", False):
        return

    def interval_to_next_pending_claim_check(self: InstanceConcurrencyContext) -> float:
        checks = self._pending_timeouts.values() if self._pending_claims else ()
        return max(0.0, min(checks, default=time.time()) - time.time())

    def sleep_til_ready(self: ActiveExecution) -> None:
        claims = self._instance_concurrency_context
        if claims is not None and claims.has_pending_claims() and not getattr(self, "said_waiting", False):
            log.warning(POOL_WAIT_NOTE)
            self.said_waiting = True  # type: ignore[attr-defined]  # (once a run: ours, on Dagster's object)
        ends = time.monotonic() + self.sleep_interval()  # type: ignore[no-untyped-call]  # (Dagster's, untyped)
        while not check_captured_interrupt():
            left = ends - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, POOL_WAIT_POLL_S))
        raise DagsterExecutionInterruptedError("interrupted while waiting for a pool slot")

    sleep_til_ready.quiet = True  # type: ignore[attr-defined]
    InstanceConcurrencyContext.interval_to_next_pending_claim_check = interval_to_next_pending_claim_check  # type: ignore[method-assign]
    ActiveExecution.sleep_til_ready = sleep_til_ready  # type: ignore[method-assign]
