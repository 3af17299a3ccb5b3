"""What automated runs target: the whole graph over a rectangle of partition keys."""

import os

import dagster as dg

from .dagster_private import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG
from .partitions import TASK_DIMENSION, VARIANT_DIMENSION

JOB_NAME = "evaluate"
AUTOMATION_ENV = "CODER_EVAL_AUTOMATION"


def automation_on() -> bool:
    """Sensor and schedule start stopped (a run may spend API money) unless CODER_EVAL_AUTOMATION=on."""
    return os.environ.get(AUTOMATION_ENV, "").lower() in ("on", "1", "true", "yes")


def sensor_status() -> dg.DefaultSensorStatus:
    return dg.DefaultSensorStatus.RUNNING if automation_on() else dg.DefaultSensorStatus.STOPPED


def schedule_status() -> dg.DefaultScheduleStatus:
    return dg.DefaultScheduleStatus.RUNNING if automation_on() else dg.DefaultScheduleStatus.STOPPED


def rectangle_tags(tasks: list[str], variants: list[str]) -> dict[str, str]:
    """Range tags selecting the rectangle from the first to the last of each (contiguous) key list."""
    start = dg.MultiPartitionKey({TASK_DIMENSION: tasks[0], VARIANT_DIMENSION: variants[0]})
    end = dg.MultiPartitionKey({TASK_DIMENSION: tasks[-1], VARIANT_DIMENSION: variants[-1]})
    return {ASSET_PARTITION_RANGE_START_TAG: str(start), ASSET_PARTITION_RANGE_END_TAG: str(end)}
