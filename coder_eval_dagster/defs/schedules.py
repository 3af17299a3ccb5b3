"""The nightly schedule: the whole suite, in one run over every partition or in chunk runs (jobs.tick_requests)."""

import os

import dagster as dg

from .jobs import schedule_status, tick_requests
from .names import JOB_NAME, NIGHT_TAG, TRIGGER_TAG
from .partitions import TASK_DIMENSION, VARIANT_DIMENSION, Rectangle

NIGHTLY_CRON_ENV = "CODER_EVAL_NIGHTLY_CRON"
DEFAULT_CRON = "0 2 * * *"


@dg.schedule(
    job_name=JOB_NAME,
    cron_schedule=os.environ.get(NIGHTLY_CRON_ENV, DEFAULT_CRON),
    execution_timezone="UTC",
    default_status=schedule_status(),
    description="Runs every registered row-task x variant once a night.",
)
def nightly_suite(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
    tasks = list(context.instance.get_dynamic_partitions(TASK_DIMENSION))
    variants = list(context.instance.get_dynamic_partitions(VARIANT_DIMENSION))
    if not tasks or not variants:
        return dg.SkipReason("no row-tasks registered yet: start the task_files_sensor or run coder-eval once")
    night = context.scheduled_execution_time.strftime("%Y-%m-%d")
    tags = {TRIGGER_TAG: "nightly", NIGHT_TAG: night}
    return tick_requests(f"nightly-{night}", context.scheduled_execution_time, [Rectangle(tasks, variants)], tags)
