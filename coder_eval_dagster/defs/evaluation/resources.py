"""The settings every asset of a run shares: what to run, where, how wide."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
from dagster._core.storage.tags import BACKFILL_ID_TAG
from pydantic import Field

from ...core.evaluation import utc_now
from ...core.resolution import Options
from ...core.runs import RunPlan, default_concurrency, options_dict, read_plan, write_plan


class CoderEvalSettings(dg.ConfigurableResource):
    """Which tasks a run covers and where its results go.

    The CLI fills ``run_dir`` (it creates the run folder and its plan first).
    A run launched from the UI, a schedule or a sensor leaves it empty: its
    folder is ``<runs_dir>/<start time>-<dagster run id prefix>``.
    """

    task_paths: list[str] = Field(default_factory=lambda: ["tasks"])
    experiment: str | None = None
    overrides: list[str] = Field(default_factory=list)
    agent_type: str | None = None
    sample: int | None = None
    tags: list[str] = Field(default_factory=list)
    include_skipped: bool = False
    runs_dir: str = "runs"
    run_dir: str | None = None
    concurrency: int = 0
    rescore: bool = False
    # The docker driver's image for tasks that name none (default: CODER_EVAL_DOCKER_IMAGE, then the built-in tag).
    docker_image: str | None = None

    def workers(self) -> int:
        return self.concurrency if self.concurrency > 0 else default_concurrency()

    def options(self) -> Options:
        return Options(
            paths=[Path(p) for p in self.task_paths],
            experiment=Path(self.experiment) if self.experiment else None,
            overrides=list(self.overrides),
            agent_type=self.agent_type,
            sample=self.sample,
            tags=list(self.tags),
            include_skipped=self.include_skipped,
        )

    @staticmethod
    def _launched_run_id(context: dg.OpExecutionContext | dg.AssetExecutionContext) -> str:
        """``<start time>-<id prefix>`` of the Dagster run, or of its backfill.

        A backfill may split into several runs (the partitioned steps, then
        suite_metrics): they share one folder, so the summary covers them all.
        """
        backfill_id = context.run.tags.get(BACKFILL_ID_TAG)
        backfill = context.instance.get_backfill(backfill_id) if backfill_id else None
        if backfill is not None:
            created, key = datetime.fromtimestamp(backfill.backfill_timestamp, UTC), backfill_id
        else:
            record = context.instance.get_run_record_by_id(context.run.run_id)
            created = record.create_timestamp.astimezone(UTC) if record else datetime.now(UTC)
            key = context.run.run_id
        return f"{created.strftime('%Y-%m-%dT%H-%M-%SZ')}-{key[:8]}"

    def run_folder(self, context: dg.OpExecutionContext | dg.AssetExecutionContext) -> tuple[Path, RunPlan]:
        """The run's folder and plan, creating both for a run that did not come from the CLI."""
        if self.run_dir:
            folder = Path(self.run_dir)
            return folder, read_plan(folder)
        run_id = self._launched_run_id(context)
        folder = Path(self.runs_dir) / run_id
        if not (folder / "run_plan.json").exists():
            folder.mkdir(parents=True, exist_ok=True)
            plan = RunPlan(
                run_id=run_id,
                started_at=utc_now(),
                options=options_dict(self.options()),
                experiment=self.experiment,
                dagster_run_id=context.run.run_id,
            )
            write_plan(folder, plan)
        return folder, read_plan(folder)


def default_settings() -> CoderEvalSettings:
    """Settings of the code location, overridable with CODER_EVAL_* environment variables."""
    paths = os.environ.get("CODER_EVAL_TASK_PATHS", "tasks")
    return CoderEvalSettings(
        task_paths=[p for p in paths.split(os.pathsep) if p],
        experiment=os.environ.get("CODER_EVAL_EXPERIMENT") or None,
        runs_dir=os.environ.get("CODER_EVAL_RUNS_DIR", "runs"),
        concurrency=int(os.environ.get("CODER_EVAL_CONCURRENCY", "0")),
        docker_image=os.environ.get("CODER_EVAL_DOCKER_IMAGE") or None,
    )
