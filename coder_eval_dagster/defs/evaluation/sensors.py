"""The file sensor: task, experiment and dataset edits register and re-run just what changed.

Cursor: ``{"<task key>|<variant key>": fingerprint}`` of every resolved
row-task (see ``core/fingerprints.py``). On each tick the sensor resolves
the configured roots, adds the new task and variant keys, retires the ones
no file defines any more, and requests one run (or one per chunk, see
jobs.tick_requests) over the changed row-tasks:
their keys are moved to the end of the task dimension, so that the run's
rectangle (changed tasks x all variants) covers them and nothing older.
An invalid file is logged and skipped; the rest go on.
"""

import hashlib
import json
from datetime import UTC, datetime

import dagster as dg

from ...core.fingerprints import fingerprints
from ...core.resolution import resolve
from .jobs import JOB_NAME, sensor_status, tick_requests
from .partitions import encode_id, task_partitions, variant_partitions
from .resources import CoderEvalSettings

MINIMUM_INTERVAL_S = 30


@dg.sensor(
    job_name=JOB_NAME,
    minimum_interval_seconds=MINIMUM_INTERVAL_S,
    default_status=sensor_status(),
    description="Registers row-tasks and variants from the task files and re-runs the ones that changed.",
)
def task_files_sensor(context: dg.SensorEvaluationContext, settings: CoderEvalSettings) -> dg.SensorResult:
    resolution = resolve(settings.run_spec())
    for problem in resolution.problems:
        context.log.warning(f"skipped: {problem}")
    current = {
        f"{encode_id(t)}|{encode_id(v)}": digest for (t, v), digest in fingerprints(resolution.row_tasks).items()
    }
    previous = json.loads(context.cursor) if context.cursor else {}
    changed = [key for key, digest in current.items() if previous.get(key) != digest]
    retiring = not resolution.problems  # with a broken file, deleted and unreadable look alike: retire nothing
    cursor = current if retiring else {**{k: v for k, v in previous.items() if k not in current}, **current}
    tasks, variants = _dimension(current, 0), _dimension(current, 1)
    changed_tasks = _dimension(dict.fromkeys(changed), 0)
    requests = _partition_requests(context.instance, tasks, variants, changed_tasks, retiring)
    runs = []
    if changed:
        ordered = [v for v in context.instance.get_dynamic_partitions(variant_partitions.name) if v in variants]
        ordered += [v for v in variants if v not in ordered]
        run_key = hashlib.sha256(json.dumps(sorted(cursor.items())).encode()).hexdigest()[:16]
        runs = tick_requests(
            f"changed-{run_key}", datetime.now(UTC), changed_tasks, ordered, {"coder_eval/trigger": "files"}
        )
        context.log.info(
            f"{len(changed)} row-task x variant(s) changed or new: "
            f"{len(runs)} run(s) over {len(changed_tasks)} task key(s)"
        )
    return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=requests, cursor=json.dumps(cursor))


def _dimension(keys: dict[str, object], position: int) -> list[str]:
    """The distinct task (0) or variant (1) keys of ``task|variant`` keys, in order."""
    return list(dict.fromkeys(key.split("|")[position] for key in keys))


def _partition_requests(
    instance: dg.DagsterInstance, tasks: list[str], variants: list[str], changed_tasks: list[str], retiring: bool
) -> list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest]:
    """New keys added; changed task keys re-added at the end; gone keys retired (on a clean tick)."""
    known_tasks = instance.get_dynamic_partitions(task_partitions.name)
    known_variants = instance.get_dynamic_partitions(variant_partitions.name)
    gone_tasks = [t for t in known_tasks if t not in tasks] if retiring else []
    gone_variants = [v for v in known_variants if v not in variants] if retiring else []
    moved = [t for t in changed_tasks if t in known_tasks]
    added = changed_tasks + [t for t in tasks if t not in known_tasks and t not in changed_tasks]
    requests = [
        task_partitions.build_delete_request(gone_tasks + moved),
        task_partitions.build_add_request(added),
        variant_partitions.build_delete_request(gone_variants),
        variant_partitions.build_add_request([v for v in variants if v not in known_variants]),
    ]
    return [r for r in requests if r.partition_keys]
