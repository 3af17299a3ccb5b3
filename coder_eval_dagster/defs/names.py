"""Every name the Dagster layer shares: the job, the group, the pool, the asset keys, the tags a run carries."""

import dagster as dg

GROUP = "coder_eval"
JOB_NAME = "evaluate"
AGENT_POOL = "agent_api"  # the concurrency pool of the agent step, across runs

TASK_DEFINITIONS = dg.AssetKey("task_definitions")
RESOLVED_TASKS = dg.AssetKey("resolved_tasks")
SANDBOX_RUNS = dg.AssetKey("sandbox_runs")
CRITERIA_SCORES = dg.AssetKey("criteria_scores")
SUITE_METRICS = dg.AssetKey("suite_metrics")
VARIANT_COMPARISON = dg.AssetKey("variant_comparison")
# What a chunk run materializes: the partitioned assets and task_definitions, which resolves the files they read
# (the summary runs once, after every chunk).
CHUNK_ASSETS = [TASK_DEFINITIONS, RESOLVED_TASKS, SANDBOX_RUNS, CRITERIA_SCORES]
SUMMARY_ASSETS = [SUITE_METRICS, VARIANT_COMPARISON]
RESCORED_ASSETS = [CRITERIA_SCORES, SUITE_METRICS, VARIANT_COMPARISON]

# Tags: Dagster's own (public strings), then ours.
BACKFILL_TAG = "dagster/backfill"  # the backfill a run belongs to
RUN_DIR_TAG = "coder_eval/run"  # a CLI run's folder
MODE_TAG = "coder_eval/mode"  # run or rescore
# A CLI run's partitions, as a digest: its steps resolve its range when they start, and another run on the instance
# may have moved keys meanwhile (launch.contiguous_block); a step whose range holds other keys fails.
PARTITIONS_TAG = "coder_eval/partitions"
PID_TAG = "coder_eval/pid"  # the CLI process running it (a run it left STARTED when it died is failed)
HOST_TAG = "coder_eval/host"
PID_RUN_TAG = "coder_eval/pid_run"  # the run PID_TAG was written for: a re-execution copies its parent's tags
PID_NAMESPACE_TAG = "coder_eval/pid_namespace"  # where PID_TAG is a pid: a container on the host's network has its name
RUN_FOLDER_TAG = "coder_eval/run_folder"  # the folder the chunk runs of one schedule or sensor tick share
CHUNK_TAG = "coder_eval/chunk"  # this chunk's index within its tick
CHUNKS_TAG = "coder_eval/chunks"  # how many chunks the tick requested
TRIGGER_TAG = "coder_eval/trigger"  # files (the sensor) or nightly (the schedule)
NIGHT_TAG = "coder_eval/night"
