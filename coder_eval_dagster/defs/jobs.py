"""What automated runs target: the whole graph over a rectangle of partition keys, or several ranged runs
(rectangles, chunks of them) into one run folder."""

import hashlib
import os
from datetime import UTC, datetime

import dagster as dg

from ..core.chunking import partitions_per_run, task_chunks
from ..core.runs import TIMESTAMP
from .dagster_private import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG
from .names import CHUNK_ASSETS, CHUNK_TAG, CHUNKS_TAG, GROUP, JOB_NAME, RUN_FOLDER_TAG
from .partitions import TASK_DIMENSION, VARIANT_DIMENSION, Rectangle

EVALUATE_JOB = dg.define_asset_job(JOB_NAME, selection=dg.AssetSelection.groups(GROUP))
AUTOMATION_ENV = "CODER_EVAL_AUTOMATION"


def automation_on() -> bool:
    """Sensor and schedule start stopped (a run may spend API money) unless CODER_EVAL_AUTOMATION=on."""
    return os.environ.get(AUTOMATION_ENV, "").lower() in ("on", "1", "true", "yes")


def sensor_status() -> dg.DefaultSensorStatus:
    return dg.DefaultSensorStatus.RUNNING if automation_on() else dg.DefaultSensorStatus.STOPPED


def schedule_status() -> dg.DefaultScheduleStatus:
    return dg.DefaultScheduleStatus.RUNNING if automation_on() else dg.DefaultScheduleStatus.STOPPED


def rectangle_tags(rectangle: Rectangle) -> dict[str, str]:
    """Range tags selecting the rectangle from the first to the last of each (contiguous) key list."""
    start = dg.MultiPartitionKey({TASK_DIMENSION: rectangle.tasks[0], VARIANT_DIMENSION: rectangle.variants[0]})
    end = dg.MultiPartitionKey({TASK_DIMENSION: rectangle.tasks[-1], VARIANT_DIMENSION: rectangle.variants[-1]})
    return {ASSET_PARTITION_RANGE_START_TAG: str(start), ASSET_PARTITION_RANGE_END_TAG: str(end)}


def tick_requests(
    run_key: str, started: datetime, rectangles: list[Rectangle], tags: dict[str, str]
) -> list[dg.RunRequest]:
    """The tick's runs over its rectangles of keys: one run of the whole graph when a single ranged run covers
    them; else one run per rectangle (per chunk of one, with CODER_EVAL_PARTITIONS_PER_RUN set) of the
    partitioned assets, all writing into one run folder named after the tick, and ``summary_after_chunks``
    materializes suite_metrics once every one of them has succeeded."""
    per_run = partitions_per_run()
    chunks = [
        Rectangle(tasks, rectangle.variants)
        for rectangle in rectangles
        for tasks in task_chunks(rectangle.tasks, len(rectangle.variants), per_run)
    ]
    if len(chunks) == 1:
        return [dg.RunRequest(run_key=run_key, tags={**rectangle_tags(chunks[0]), **tags})]
    digest = hashlib.sha256(run_key.encode()).hexdigest()[:8]
    shared = {
        **tags,
        RUN_FOLDER_TAG: f"{started.astimezone(UTC).strftime(TIMESTAMP)}-{digest}",
        CHUNKS_TAG: str(len(chunks)),
    }
    return [
        dg.RunRequest(
            run_key=f"{run_key}-chunk-{index}",
            asset_selection=CHUNK_ASSETS,
            tags={**rectangle_tags(chunk), **shared, CHUNK_TAG: str(index)},
        )
        for index, chunk in enumerate(chunks)
    ]
