"""suite_metrics once per chunked tick: after the last of its chunk runs has succeeded.

A backfill needs no sensor (Dagster's backfill daemon runs an unpartitioned
child after every partition of its parents); the runs a schedule or sensor
tick requests are independent runs, so this run-status sensor counts the
tick's succeeded chunks (by their tags) and requests the summary once (its
run key is the tick's run folder). A chunk retried by Dagster's run retries
counts once, whichever attempt succeeded.
"""

import dagster as dg

from .jobs import CHUNK_TAG, CHUNKS_TAG, EVALUATE_JOB, SUMMARY_ASSETS
from .resources import RUN_FOLDER_TAG


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[EVALUATE_JOB],
    request_job=EVALUATE_JOB,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Materializes suite_metrics once all chunk runs of a schedule or sensor tick have succeeded.",
)
def summary_after_chunks(context: dg.RunStatusSensorContext) -> dg.RunRequest | dg.SkipReason:
    tags = context.dagster_run.tags
    if CHUNK_TAG not in tags:
        return dg.SkipReason("not a chunk run")
    folder, expected = tags[RUN_FOLDER_TAG], int(tags[CHUNKS_TAG])
    succeeded = context.instance.get_runs(
        filters=dg.RunsFilter(tags={RUN_FOLDER_TAG: folder}, statuses=[dg.DagsterRunStatus.SUCCESS])
    )
    done = {run.tags[CHUNK_TAG] for run in succeeded if CHUNK_TAG in run.tags}
    if len(done) < expected:
        return dg.SkipReason(f"{len(done)} of {expected} chunk runs of {folder} succeeded")
    return dg.RunRequest(run_key=f"summary-{folder}", asset_selection=SUMMARY_ASSETS, tags={RUN_FOLDER_TAG: folder})
