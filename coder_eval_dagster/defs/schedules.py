"""The nightly schedule: the whole suite, in one run over every partition or in chunk runs (jobs.tick_requests)."""

import os

import dagster as dg

from .jobs import schedule_status, tick_requests
from .names import JOB_NAME, NIGHT_TAG, TRIGGER_TAG
from .partitions import TASK_DIMENSION, VARIANT_DIMENSION, rectangles
from .resources import CoderEvalSettings
from .sensors import current_fingerprints

NIGHTLY_CRON_ENV = "CODER_EVAL_NIGHTLY_CRON"
DEFAULT_CRON = "0 2 * * *"


@dg.schedule(
    job_name=JOB_NAME,
    cron_schedule=os.environ.get(NIGHTLY_CRON_ENV, DEFAULT_CRON),
    execution_timezone="UTC",
    default_status=schedule_status(),
    description="Runs every registered row-task x variant the served task files define, once a night.",
)
def nightly_suite(
    context: dg.ScheduleEvaluationContext, settings: CoderEvalSettings
) -> list[dg.RunRequest] | dg.SkipReason:
    tasks = list(context.instance.get_dynamic_partitions(TASK_DIMENSION))
    variants = list(context.instance.get_dynamic_partitions(VARIANT_DIMENSION))
    if not tasks or not variants:
        return dg.SkipReason("no row-tasks registered yet: start the task_files_sensor or run coder-eval once")
    pairs = _served_pairs(context, settings, tasks, variants)
    if not pairs:
        return dg.SkipReason("the served task files define none of the registered row-task x variant keys")
    night = context.scheduled_execution_time.strftime("%Y-%m-%d")
    tags = {TRIGGER_TAG: "nightly", NIGHT_TAG: night}
    return tick_requests(f"nightly-{night}", context.scheduled_execution_time, rectangles(pairs, tasks, variants), tags)


def _served_pairs(
    context: dg.ScheduleEvaluationContext, settings: CoderEvalSettings, tasks: list[str], variants: list[str]
) -> list[tuple[str, str]]:
    """The registered keys the served files define now. The instance also keeps keys no served file defines (a
    `coder-eval run` of a file elsewhere, a task deleted while the sensor was off): planned, their runs fail and
    the night never gets its summary."""
    defined, _ = current_fingerprints(settings.run_spec(), context.log)
    registered_tasks, registered_variants = set(tasks), set(variants)
    pairs = [(task, variant) for task, _, variant in (key.partition("|") for key in defined)]
    served = [(task, variant) for task, variant in pairs if task in registered_tasks and variant in registered_variants]
    if left_out := len(tasks) * len(variants) - len(served):
        context.log.warning(f"{left_out} registered row-task x variant key(s) no served task file defines: left out")
    return served
