"""The code location: `dagster dev` (workspace.yaml) and `dg check defs` load `defs` from here."""

from __future__ import annotations

import dagster as dg

from .defs.evaluation.assets import ASSETS
from .defs.evaluation.resources import default_settings

# Each op already runs its partitions in a thread pool, so steps run in the
# run's own process: a process per step would only add start-up time.
defs = dg.Definitions(
    assets=ASSETS,
    resources={"settings": default_settings()},
    jobs=[dg.define_asset_job("evaluate", selection=dg.AssetSelection.groups("coder_eval"))],
    executor=dg.in_process_executor,
)
