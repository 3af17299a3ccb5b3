"""How many partitions one Dagster run carries, and how a tick's rectangle splits into chunk runs.

One run (the default) is fastest on one machine: no per-run start-up, one
thread pool. A deployment that launches each run in its own container sets
``CODER_EVAL_PARTITIONS_PER_RUN`` so that a backfill or a tick spreads over
several runs, each of at most that many partitions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .environment_settings import whole_number

PARTITIONS_PER_RUN_ENV = "CODER_EVAL_PARTITIONS_PER_RUN"


def partitions_per_run(environ: Mapping[str, str] = os.environ) -> int | None:
    """The configured chunk size; None (unset, empty or 0) means one run for everything."""
    return whole_number(PARTITIONS_PER_RUN_ENV, "of partitions per run; 0: one run", environ) or None


def task_chunks(tasks: list[str], variants: int, per_run: int | None) -> list[list[str]]:
    """Contiguous slices of the task keys, each covering at most ``per_run`` partitions with all variants.

    A rectangle of tasks x variants is what one ranged run selects, so a chunk
    is a run of whole task rows; a chunk has at least one task even when the
    variants alone exceed ``per_run``.
    """
    if per_run is None or not tasks:
        return [tasks]
    width = max(1, per_run // max(1, variants))
    return [tasks[start : start + width] for start in range(0, len(tasks), width)]
