"""What every asset of a run shares: its settings (the run spec and run options) and its run context."""

from __future__ import annotations

import copy
import os
import socket
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import dagster as dg
from pydantic import BaseModel, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from ..core.environment_settings import whole_number
from ..core.reports.shown_text import skipped_file
from ..core.resolution import experiment_names_tasks, resolve
from ..core.run_context import RunContext
from ..core.run_spec import RunOptions, RunSpec
from ..core.runs import OpenRun, load_run, open_once, open_run
from .names import BACKFILL_TAG, HOST_TAG, PID_NAMESPACE_TAG, PID_RUN_TAG, PID_TAG, RUN_DIR_TAG, RUN_FOLDER_TAG


def as_config(model: type[BaseModel]) -> type[dg.Config]:
    """A core model's fields as Dagster config, so that the Launchpad shows and edits them; declared once, in core.

    Their bounds are left to the core model (``settings_from``), whose validators say more than pydantic's own
    error at the resource's construction: one line naming the Launchpad's field.
    """
    fields: dict[str, Any] = {name: (info.annotation, _unbounded(info)) for name, info in model.model_fields.items()}
    return create_model(f"{model.__name__}Config", __base__=dg.Config, __doc__=model.__doc__, **fields)


def _unbounded(info: FieldInfo) -> FieldInfo:
    kept = copy.copy(info)
    kept.metadata = []
    return kept


M = TypeVar("M", bound=BaseModel)


def settings_from(model: type[M], config: dg.Config, block: str) -> M:
    """The core model of a config block; what it refuses, a step's failure in one line naming the Launchpad's field
    (it was pydantic's error of the model, with its link and stack)."""
    try:
        return model.model_validate(config.model_dump())
    except ValidationError as exc:
        fields = ("resources.settings.config", block)
        said = [
            f"{'.'.join(map(str, (*fields, *e['loc'])))}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors(include_url=False)
        ]
        raise dg.Failure(description="; ".join(said)) from None


if TYPE_CHECKING:
    # Built at run time with RunSpec's (RunOptions') fields, which a type checker cannot see: a Config.
    RunSpecConfig = dg.Config
    RunOptionsConfig = dg.Config
else:
    RunSpecConfig = as_config(RunSpec)
    RunOptionsConfig = as_config(RunOptions)


class CoderEvalSettings(dg.ConfigurableResource):  # type: ignore[type-arg]  # subscripted, it is a new pydantic class
    """Which tasks a run covers and where its results go.

    The CLI opens the run folder itself (plan and resolved snapshot) and
    passes ``run_dir``. A run launched from the UI, a schedule or the sensor
    leaves it empty: its first step opens ``<runs_dir>/<start time>-<id prefix>``
    from ``spec``.
    """

    spec: RunSpecConfig = Field(default_factory=lambda: RunSpecConfig(task_paths=["tasks"]))
    options: RunOptionsConfig = Field(default_factory=RunOptionsConfig)
    run_dir: str | None = None  # the CLI's: the run folder it opened (a launched run opens its own)
    rescore: bool = False

    def run_spec(self) -> RunSpec:
        return settings_from(RunSpec, self.spec, "spec")

    def run_options(self) -> RunOptions:
        return settings_from(RunOptions, self.options, "options")

    def open(self, context: dg.AssetExecutionContext, run: RunContext) -> OpenRun:
        """The run's folder, plan and snapshot (read once per process); a launched run's first step creates them."""
        if self.run_dir:
            given = Path(self.run_dir)
            return run.run_folder(given, lambda: load_run(given))
        refuse_sqlite_across_containers(context.instance)
        folder = Path(self.run_options().runs_dir) / launched_run_name(context)
        # where it writes, for `prune` wherever and with whatever settings, and the process (the run worker: one
        # per run, in process) a later one tells dead by (fail_orphaned_runs); a re-execution comes with its
        # parent's, which name another folder, process and run
        tags = {RUN_DIR_TAG: str(folder.absolute()), **process_tags(context.run.run_id)}
        if any(context.run.tags.get(name) != value for name, value in tags.items()):
            context.instance.add_run_tags(context.run.run_id, tags)
        return run.run_folder(folder, lambda: open_once(folder, lambda: self._create(context)))

    def _create(self, context: dg.AssetExecutionContext) -> OpenRun:
        resolution = resolve(self.run_spec())
        resolution.skip_invalid_folder_files()  # as the CLI's run: recorded in skipped_tasks, and the run fails
        for problem in resolution.problems[:50]:
            context.log.warning(f"skipped: {problem}")
        for skipped in resolution.skipped[:50]:
            context.log.warning(f"skipped: {skipped_file(skipped.path, skipped.reason)}")
        folder = Path(self.run_options().runs_dir) / launched_run_name(context)
        return open_run(folder, self.run_spec(), context.run.run_id, resolution, launched=True)


@dg.resource(
    required_resource_keys={"settings"},
    description="The run context of a launched run: its model route (from this process's environment) and judge limit.",
)
def launched_run_context(init_context: dg.InitResourceContext) -> Iterator[RunContext]:
    """Made once per run process from the settings' options, with the credentials, endpoints and telemetry settings
    of that process's environment: under `coder-eval dev` or the daemon the run worker inherits theirs; in a run
    container, the launcher's ``env_vars`` put them there. Closed (telemetry flushed) when the run ends. The CLI
    passes the context it built instead (``build_definitions``).
    """
    options = init_context.resources.settings.run_options()
    context = RunContext.create(options.backend, options.judge_concurrency)
    try:
        yield context
    finally:
        context.close()


def process_tags(run_id: str) -> dict[str, str]:
    """The tags naming the process that runs the run ``run_id``, so that a later process on this machine can
    tell it died."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return {
        PID_TAG: str(os.getpid()),
        HOST_TAG: socket.gethostname(),
        PID_NAMESPACE_TAG: namespace,
        PID_RUN_TAG: run_id,
    }


def launched_run_name(context: dg.AssetExecutionContext) -> str:
    """``<start time>-<id prefix>`` of the Dagster run, or of its backfill, or the tick's shared folder.

    A backfill or a tick may split into several runs (the partitioned chunks,
    then suite_metrics): they share one folder, so the summary covers them all.
    """
    shared = context.run.tags.get(RUN_FOLDER_TAG)
    if shared:
        return safe_folder_name(shared)
    return folder_name_of(context.instance, context.run.run_id, context.run.tags)


def folder_name_of(instance: dg.DagsterInstance, run_id: str, tags: Mapping[str, str]) -> str:
    """The run folder name a launched run (or its backfill) writes into; ``prune`` keeps the two together."""
    if tags.get(RUN_FOLDER_TAG):
        return tags[RUN_FOLDER_TAG]
    if tags.get(RUN_DIR_TAG):  # a CLI run names its folder
        return Path(tags[RUN_DIR_TAG]).name
    backfill_id = tags.get(BACKFILL_TAG)
    backfill = instance.get_backfill(backfill_id) if backfill_id else None
    if backfill is not None:
        created, key = datetime.fromtimestamp(backfill.backfill_timestamp, UTC), backfill.backfill_id
    else:
        record = instance.get_run_record_by_id(run_id)
        created = record.create_timestamp.astimezone(UTC) if record else datetime.now(UTC)
        key = run_id
    return f"{created.strftime('%Y-%m-%dT%H-%M-%SZ')}-{key[:8]}"


def run_folder_of(instance: dg.DagsterInstance, run: dg.DagsterRun) -> Path:
    """The folder a run writes into, absolute: its CLI tag, else its config's runs_dir (the code location's default
    when its config names none) and ``folder_name_of``. A relative path is taken from here, as the run took it from
    where it started: ``prune`` keeps the runs of another runs dir on the same instance."""
    if run.tags.get(RUN_DIR_TAG):
        return Path(run.tags[RUN_DIR_TAG]).absolute()
    config: Mapping[str, Any] = run.run_config
    options = config.get("resources", {}).get("settings", {}).get("config", {}).get("options", {})
    runs_dir = options.get("runs_dir") or default_settings().run_options().runs_dir
    return Path(runs_dir).absolute() / folder_name_of(instance, run.run_id, run.tags)


def safe_folder_name(name: str) -> str:
    """A run folder tag names one folder inside runs_dir, nothing above or beside it."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise dg.Failure(description=f"tag {RUN_FOLDER_TAG}={name!r}: expected a plain folder name")
    return name


def default_settings() -> CoderEvalSettings:
    """Settings of the code location, overridable with CODER_EVAL_* environment variables. Without
    CODER_EVAL_TASK_PATHS, `tasks` as the CLI takes it: not beside an experiment that names its own tasks."""
    experiment = os.environ.get("CODER_EVAL_EXPERIMENT") or None
    default = "" if experiment is not None and experiment_names_tasks(Path(experiment)) else "tasks"
    paths = os.environ.get("CODER_EVAL_TASK_PATHS", default)
    spec = RunSpecConfig(task_paths=[p for p in paths.split(os.pathsep) if p], experiment=experiment)
    options = RunOptionsConfig(
        runs_dir=os.environ.get("CODER_EVAL_RUNS_DIR", "runs"),
        concurrency=whole_number("CODER_EVAL_CONCURRENCY", "of evaluations at once; 0: the CPU count") or 0,
        docker_image=os.environ.get("CODER_EVAL_DOCKER_IMAGE") or None,
    )
    return CoderEvalSettings(spec=spec, options=options)


# Launchers that run each run on the same machine, in a process that reaches the instance's files.
LOCAL_LAUNCHERS = ("DefaultRunLauncher",)


def refuse_sqlite_across_containers(instance: dg.DagsterInstance) -> None:
    """Fail the step when runs are launched elsewhere (a container, a pod) but the instance is SQLite.

    Each run container would open its own copy of the SQLite files (or a
    shared file that SQLite cannot lock across hosts): runs, events and
    partitions would be lost or corrupted. PostgreSQL is the storage there.
    """
    launcher = type(instance.run_launcher).__name__
    storages = (instance.run_storage, instance.event_log_storage, instance.schedule_storage)
    sqlite = [type(s).__name__ for s in storages if s is not None and "sqlite" in type(s).__name__.lower()]
    if launcher not in LOCAL_LAUNCHERS and sqlite:
        raise dg.Failure(
            description=f"the run launcher {launcher} starts runs in other containers, but the instance stores "
            f"in SQLite ({', '.join(sqlite)}): configure `storage: postgres:` in dagster.yaml (docs/deploy.md)"
        )
