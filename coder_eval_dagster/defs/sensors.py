"""The file sensor: task, experiment and dataset edits register and re-run just what changed.

Each tick resolves the configured roots, adds the new task and variant keys
(at the end of their dimension), retires the ones no file defines any more,
and requests runs over exactly the changed or new row-task x variant keys,
where they are: one ranged run per rectangle of contiguous keys, all into one
run folder (jobs.tick_requests). No key is ever moved, so a tick never adds
and deletes the same key (which Dagster refuses). A file that does not
validate, or whose resolution crashes, is logged and skipped; the rest go on.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from logging import Logger
from pathlib import Path
from typing import TypeVar

import dagster as dg

from ..core.environment_settings import whole_number
from ..core.fingerprints import fingerprints
from ..core.resolution import Resolution, RowTask, discover, resolve
from ..core.run_spec import RunSpec
from .jobs import EVALUATE_JOB, sensor_status, tick_requests
from .names import (
    CHUNK_TAG,
    CHUNKS_TAG,
    CRITERIA_SCORES,
    JOB_NAME,
    NIGHT_TAG,
    RUN_FOLDER_TAG,
    SUMMARY_ASSETS,
    TRIGGER_TAG,
)
from .partitions import (
    TASK_DIMENSION,
    VARIANT_DIMENSION,
    encode_id,
    rectangles,
    task_partitions,
    variant_partitions,
)
from .resources import CoderEvalSettings

INTERVAL_ENV = "CODER_EVAL_SENSOR_INTERVAL_S"
DEFAULT_INTERVAL_S = 30
T = TypeVar("T")


def minimum_interval_s() -> int:
    """Seconds between ticks: CODER_EVAL_SENSOR_INTERVAL_S, default 30 (the daemon looks every 5 s at most)."""
    seconds = whole_number(INTERVAL_ENV, "of seconds")
    return DEFAULT_INTERVAL_S if seconds is None else seconds


FINGERPRINTS_KEY = "coder-eval/sensor-fingerprints/{sensor}/{name}"
EPOCH_BYTES = 4  # of a cursor's epoch: a reset draws one of 4 billion
KEPT_FINGERPRINTS = 8  # a sensor's entries kept, the ones read or written last: the committed cursor's among them


class FingerprintStore:
    """The sensor's fingerprints in the instance's key-value store, an entry per content (its digest names it).

    Dagster stores a sensor's cursor with every tick, the skipped ones too (2,880 a day at 30 s): a fingerprint
    per key in the cursor was 0.46 MB a tick at 10,000 keys. An entry never changes once written, so no dry run
    ("Test sensor", whatever cursor it is given) or tick that fails after writing can change what the committed
    cursor names. A sensor (its code location and repository, as Dagster keys its own state) keeps the
    ``KEPT_FINGERPRINTS`` entries it read or wrote last, in an index; an older one is emptied. Every tick reads
    its cursor's entry and so keeps it among them. The key-value store is the run storage's, what Dagster's own
    daemons keep their cursors in.
    """

    def __init__(self, instance: dg.DagsterInstance, sensor: str):
        self.storage, self.sensor = instance.run_storage, sensor

    def _key(self, name: str) -> str:
        return FINGERPRINTS_KEY.format(sensor=self.sensor, name=name)

    def _read(self, name: str) -> str | None:
        key = self._key(name)
        return self.storage.get_cursor_values({key}).get(key)

    def get(self, digest: str) -> dict[str, str] | None:
        text = self._read(digest)
        return json.loads(text) if text and _digest(text) == digest else None

    def put(self, fingerprints: dict[str, str]) -> str:
        """Store ``fingerprints``; the digest naming them."""
        text = json.dumps(fingerprints, sort_keys=True)
        digest = _digest(text)
        self.storage.set_cursor_values({self._key(digest): text})
        self.keep(digest)
        return digest

    def keep(self, digest: str) -> None:
        """``digest`` first in the index (a write only when it is not); the ones past ``KEPT_FINGERPRINTS`` go."""
        text = self._read("index")
        index = [d for d in (json.loads(text) if text else []) if isinstance(d, str)]
        if index[:1] == [digest]:
            return
        index = [digest, *(d for d in index if d != digest)]
        gone = {self._key(d): "" for d in index[KEPT_FINGERPRINTS:]}
        self.storage.set_cursor_values({self._key("index"): json.dumps(index[:KEPT_FINGERPRINTS]), **gone})


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def sensor_identity(context: dg.SensorEvaluationContext) -> str:
    """Which file sensor this is on the instance: its code location's and repository's (a test's context names
    neither); one a repository."""
    origin = context.code_location_origin
    return _digest(f"{origin.location_name if origin else ''}/{context.repository_name or ''}")[:16]


@dataclass(frozen=True)
class Cursor:
    """What the sensor keeps between ticks: the digest naming its fingerprints (of each ``task|variant`` key) in
    the store, how many ticks requested runs, and the epoch: an id drawn when the cursor is made (the sensor
    turned on, its cursor reset). Each tick's run keys carry both: a reverted file is a new request, never a
    repeat, even of a tick before a reset (whose count started again at 0: Dagster skipped the run as done). The
    two earlier forms held the fingerprints themselves (``inline``); anything else (set by hand) is read as no
    cursor. A cursor without an epoch (an earlier form) takes one from its text: the same cursor, the same keys."""

    digest: str | None = None  # None: nothing stored yet
    requests: int = 0
    inline: dict[str, str] | None = None
    epoch: str = field(default_factory=lambda: secrets.token_hex(EPOCH_BYTES))

    @classmethod
    def parse(cls, text: str | None) -> Cursor:
        if not text:
            return cls()
        try:
            data = json.loads(text)
        except ValueError:
            return cls()
        if not isinstance(data, dict):
            return cls()
        requests = data["requests"] if isinstance(data.get("requests"), int) else 0
        epoch = data["epoch"] if isinstance(data.get("epoch"), str) else _digest(text)[: EPOCH_BYTES * 2]
        if "digest" in data:
            return cls(data["digest"] if isinstance(data["digest"], str) else None, requests, epoch=epoch)
        if isinstance(data.get("fingerprints"), dict):  # the fingerprints in the cursor, with the count
            return cls(requests=requests, inline=_fingerprints_only(data["fingerprints"]), epoch=epoch)
        return cls(inline=_fingerprints_only(data) or None, epoch=epoch)  # the fingerprints alone

    def fingerprints(self, store: FingerprintStore) -> dict[str, str] | None:
        """The fingerprints of the last tick; None when none were kept (turned on, reset) or their entry is gone."""
        if self.inline is not None:
            return self.inline
        return store.get(self.digest) if self.digest else None

    def after(
        self, store: FingerprintStore, earlier: dict[str, str] | None, fingerprints: dict[str, str], requested: bool
    ) -> Cursor:
        """The next tick's cursor, naming ``fingerprints``: this one's entry when they are ``earlier`` (read from
        it, and kept), else a new one, written now."""
        if self.digest is not None and earlier is not None and fingerprints == earlier:
            store.keep(self.digest)
            return Cursor(self.digest, self.requests + requested, epoch=self.epoch)
        return Cursor(store.put(fingerprints), self.requests + requested, epoch=self.epoch)

    def run_key(self, digest: str) -> str:
        return f"files-{self.epoch}-{self.requests}-{digest}"

    def dump(self) -> str:
        return json.dumps({"digest": self.digest, "requests": self.requests, "epoch": self.epoch})


def _fingerprints_only(data: dict[str, object]) -> dict[str, str]:
    """The ``task|variant``: fingerprint pairs of an earlier cursor (what else a hand-set one holds is not)."""
    return {key: value for key, value in data.items() if "|" in key and isinstance(value, str)}


@dg.sensor(
    job_name=JOB_NAME,
    minimum_interval_seconds=minimum_interval_s(),
    default_status=sensor_status(),
    description="Registers row-tasks and variants from the task files and runs the ones that are new or changed.",
)
def task_files_sensor(context: dg.SensorEvaluationContext, settings: CoderEvalSettings) -> dg.SensorResult:
    current, skipped = current_fingerprints(settings.run_spec(), context.log)
    complete = not skipped
    previous, store = Cursor.parse(context.cursor), FingerprintStore(context.instance, sensor_identity(context))
    earlier = previous.fingerprints(store)
    if switched := _variants_switched(earlier, current):  # the code location's settings, not the files
        context.log.warning(switched)
        return dg.SensorResult(skip_reason=switched)  # the cursor kept: set back, nothing has changed
    if earlier is not None:
        changed = [key for key, digest in current.items() if earlier.get(key) != digest]
    else:  # turned on (or reset): what the instance has evaluated already is the baseline, not a change
        if context.cursor:
            context.log.warning("the last tick's fingerprints are gone from the instance: taken as turned on")
        evaluated = context.instance.get_materialized_partitions(CRITERIA_SCORES)
        changed = [key for key in current if key not in evaluated]
    # with a file skipped, deleted and unreadable look alike: retire nothing, forget nothing
    kept = {} if complete else {k: v for k, v in (earlier or {}).items() if k not in current}
    fingerprints = {**kept, **current}
    cursor = previous.after(store, earlier, fingerprints, bool(changed))
    retired = set(earlier or {}) - set(current) if complete else set()  # what its own files no longer define
    tasks, variants, partition_requests = _keys_after_tick(context.instance, current, retired)
    runs = _run_requests(cursor, fingerprints, changed, tasks, variants) if changed else []
    if runs:
        context.log.info(f"{len(changed)} row-task x variant(s) changed or new: {len(runs)} run(s)")
    return dg.SensorResult(
        run_requests=runs,
        dynamic_partitions_requests=partition_requests,
        cursor=cursor.dump(),
        skip_reason=None if runs else _skip_reason(skipped, partition_requests),
    )


def _variants_switched(earlier: dict[str, str] | None, current: dict[str, str]) -> str:
    """Why the tick does nothing when the files now served share no variant with the last tick's: the experiment
    of the code location changed (``CODER_EVAL_EXPERIMENT`` set, unset or another file), as a restart with a
    setting left out does. Retiring the last tick's variants and running the new ones would then re-run, and pay
    for, the whole suite when the setting comes back."""
    before, now = set(_dimension(earlier or {}, 1)), set(_dimension(current, 1))
    if not before or not now or before & now:
        return ""
    return (
        f"the served variants ({', '.join(sorted(now))}) share none with the last tick's ({', '.join(sorted(before))}):"
        " the code location's experiment changed (CODER_EVAL_EXPERIMENT set, unset or another file?). Nothing is "
        "retired or run; set it back, or reset this sensor's cursor to start over with these variants"
    )


def _skip_reason(
    skipped: list[str], requests: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest]
) -> str | None:
    """What the tick history says of a tick without runs: the keys it retired or added, the files it left out (their
    log lines go to the daemon's output, not the UI); None for a tick that did nothing."""
    changes = [
        f"{'retired' if isinstance(r, dg.DeleteDynamicPartitionsRequest) else 'added'} {len(r.partition_keys)} "
        f"{r.partitions_def_name} key(s)"
        for r in requests
    ]
    files = skipped[:3] + ([f"and {len(skipped) - 3} more"] if len(skipped) > 3 else [])
    return "; ".join([*changes, *files]) or None


def _run_requests(
    cursor: Cursor, fingerprints: dict[str, str], changed: list[str], tasks: list[str], variants: list[str]
) -> list[dg.RunRequest]:
    """Runs over exactly the changed keys where they are; the run key is new for every tick that runs (across cursor
    resets too), the same for a tick evaluated again with the same cursor."""
    digest = _digest(json.dumps([(k, fingerprints[k]) for k in changed]))[:12]
    pairs = [(task, variant) for task, variant in (key.split("|") for key in changed)]
    return tick_requests(
        cursor.run_key(digest),
        datetime.now(UTC),
        rectangles(pairs, tasks, variants),
        {TRIGGER_TAG: "files"},
    )


def current_fingerprints(spec: RunSpec, log: Logger) -> tuple[dict[str, str], list[str]]:
    """{"task|variant" key: fingerprint} of what the files define now, and what was skipped (nothing: every file
    was read).

    A file that does not validate or whose resolution crashes is logged (one
    line naming the file and the cause) and left out.
    """
    resolution, crashed = _resolve(spec)
    digests, crashed_too = _isolating_crashes(
        list(dict.fromkeys(rt.source for rt in resolution.row_tasks)),
        lambda sources: _fingerprints_from(resolution.row_tasks, sources),
    )
    crashed |= crashed_too
    skipped = [f"skipped: {problem}" for problem in resolution.problems]
    skipped += [f"skipped: {path}: resolution crashed: {cause}" for path, cause in crashed.items()]
    for line in skipped:
        log.warning(line)
    current = {f"{encode_id(t)}|{encode_id(v)}": digest for (t, v), digest in digests.items()}
    return current, skipped


def _fingerprints_from(row_tasks: list[RowTask], sources: list[Path]) -> dict[tuple[str, str], str]:
    chosen = set(sources)
    return fingerprints([rt for rt in row_tasks if rt.source in chosen])


def _resolve(spec: RunSpec) -> tuple[Resolution, dict[Path, str]]:
    """``resolve(spec)``; if that crashes, the task files that crash it alone are left out (with the cause)."""
    try:
        return resolve(spec), {}
    except Exception:
        files, problems = discover([Path(p) for p in spec.task_paths])
        resolution, crashed = _isolating_crashes(
            files, lambda some: resolve(spec.model_copy(update={"task_paths": [str(f) for f in some]}))
        )
        resolution.problems.extend(problems)
        return resolution, crashed


def _isolating_crashes(paths: list[Path], compute: Callable[[list[Path]], T]) -> tuple[T, dict[Path, str]]:
    """``compute(paths)``; if it raises, without each path with which it raises alone (and why).

    A crash that no single path causes still raises: the tick fails and the
    next one tries again.
    """
    try:
        return compute(paths), {}
    except Exception:
        crashed = {}
        for path in paths:
            try:
                compute([path])
            except Exception as exc:
                crashed[path] = f"{type(exc).__name__}: {exc}"
        return compute([p for p in paths if p not in crashed]), crashed


def _keys_after_tick(
    instance: dg.DagsterInstance, current: dict[str, str], retired: set[str]
) -> tuple[list[str], list[str], list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest]]:
    """The task and variant keys in order once the tick's partition requests apply, and those requests.

    Only keys of ``retired`` (what the sensor's files defined at an earlier tick and define no more) are
    deleted: the instance also holds the keys of every ``coder-eval run`` and backfill, which the sensor
    never defined and must not take from under them (a CLI run in flight failed on its deleted key).
    """
    orders: list[list[str]] = []
    requests: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
    dimensions = ((TASK_DIMENSION, task_partitions), (VARIANT_DIMENSION, variant_partitions))
    for position, (name, partitions) in enumerate(dimensions):
        known = instance.get_dynamic_partitions(name)  # the definition's name (its .name is optional)
        gone = set(_dimension(dict.fromkeys(retired, ""), position)) - set(_dimension(current, position))
        after = _dimension_after_tick(known, _dimension(current, position), gone)
        orders.append(after)
        requests += _partition_requests(partitions, known, after)
    return orders[0], orders[1], requests


def _dimension(keys: dict[str, str], position: int) -> list[str]:
    """The distinct task (0) or variant (1) keys of ``task|variant`` keys, in order."""
    return list(dict.fromkeys(key.split("|")[position] for key in keys))


def _dimension_after_tick(known: Sequence[str], current: list[str], gone: set[str]) -> list[str]:
    """A dimension's keys in order once the tick's requests apply: the known ones where they are (less the
    ``gone`` ones), then the new ones."""
    registered = set(known)
    return [k for k in known if k not in gone] + [k for k in current if k not in registered]


def _partition_requests(
    partitions: dg.DynamicPartitionsDefinition, known: Sequence[str], after: list[str]
) -> list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest]:
    """From ``known`` to ``after``: retire and add, never both for one key."""
    staying, registered = set(after), set(known)
    gone, new = [k for k in known if k not in staying], [k for k in after if k not in registered]
    requests: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = [
        partitions.build_delete_request(gone),
        partitions.build_add_request(new),
    ]
    return [r for r in requests if r.partition_keys]


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[EVALUATE_JOB],
    request_job=EVALUATE_JOB,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Materializes suite_metrics once all chunk runs of a schedule or sensor tick have succeeded.",
)
def summary_after_chunks(context: dg.RunStatusSensorContext) -> dg.RunRequest | None:
    """None for a run that completes nothing: Dagster then goes on to the tick's next run (a skip reason ended the
    tick, so a tick of 100 chunk runs took 100 ticks, 50 minutes, to reach its summary)."""
    tags = context.dagster_run.tags
    if CHUNK_TAG not in tags:
        return None
    folder, expected = tags[RUN_FOLDER_TAG], int(tags[CHUNKS_TAG])
    succeeded = context.instance.get_runs(
        filters=dg.RunsFilter(tags={RUN_FOLDER_TAG: folder}, statuses=[dg.DagsterRunStatus.SUCCESS])
    )
    done = {run.tags[CHUNK_TAG] for run in succeeded if CHUNK_TAG in run.tags}
    if len(done) < expected:
        context.log.info(f"{len(done)} of {expected} chunk runs of {folder} succeeded")
        return None
    # the tick's own tags too (trigger, night): filtering runs by them finds the night's summary and its checks
    kept = {name: tags[name] for name in (TRIGGER_TAG, NIGHT_TAG) if name in tags}
    return dg.RunRequest(
        run_key=f"summary-{folder}", asset_selection=SUMMARY_ASSETS, tags={RUN_FOLDER_TAG: folder, **kept}
    )
