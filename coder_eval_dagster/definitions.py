"""The code location: `dagster dev` (workspace.yaml) and `dg check defs` load `defs` from here."""

from __future__ import annotations

import dagster as dg

from .core.run_context import RunContext
from .defs.assets import ASSETS
from .defs.dagster_private import quiet_pool_waits
from .defs.jobs import EVALUATE_JOB
from .defs.names import JOB_NAME
from .defs.resources import CoderEvalSettings, default_settings, launched_run_context
from .defs.schedules import nightly_suite
from .defs.sensors import summary_after_chunks, task_files_sensor

__all__ = ["JOB_NAME", "build_definitions", "defs"]  # the CLI and tests take JOB_NAME from here


def build_definitions(settings: CoderEvalSettings, run_context: RunContext | None = None) -> dg.Definitions:
    """The graph with the given settings and run context (the CLI passes its own; the code location its
    defaults, and a context made in each run's process from the environment it was launched with).

    Each step already runs its partitions in a thread pool, so steps run in the
    run's own process: a process per step would only add start-up time.
    """
    quiet_pool_waits()
    return dg.Definitions(
        assets=ASSETS,
        resources={
            "settings": settings,
            "run_context": launched_run_context
            if run_context is None
            else dg.ResourceDefinition.hardcoded_resource(run_context, "the CLI's run context"),
        },
        jobs=[EVALUATE_JOB],
        sensors=[task_files_sensor, summary_after_chunks],
        schedules=[nightly_suite],
        executor=dg.in_process_executor,
    )


defs = build_definitions(default_settings())
