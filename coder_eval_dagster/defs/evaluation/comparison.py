"""variant_comparison (after suite_metrics) and its no_significant_regression check.

The asset compares the variants of the run just finished; the check compares
the run with the previous run of the same task set, found through the
instance: the latest earlier ``suite_metrics`` materialization whose
``run_dir`` holds the same (row-task, variant) pairs.
"""

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg

from ...core.run_context import RunContext
from .resources import CoderEvalSettings

if TYPE_CHECKING:
    from ...core.compare.rows import RunRows

GROUP = "coder_eval"  # assets.GROUP; not imported, since assets.py lists this module's asset
SUITE_METRICS = dg.AssetKey("suite_metrics")
LOOKBACK = 30  # earlier suite_metrics materializations searched for the same task set

REGRESSION_CHECK = dg.AssetCheckSpec(
    "no_significant_regression",
    asset="variant_comparison",
    description="No variant is significantly worse than in the previous run of the same task set "
    "(McNemar exact p < 0.05 with a negative difference in success rate fails).",
)


def _earlier_run_dirs(instance: dg.DagsterInstance, current: Path) -> list[Path]:
    """Run folders of the latest suite_metrics materializations, newest first, this run's own left out."""
    records = instance.fetch_materializations(SUITE_METRICS, limit=LOOKBACK).records
    folders = []
    for record in records:
        materialization = record.asset_materialization
        entry = materialization.metadata.get("run_dir") if materialization else None
        if entry is not None and Path(str(entry.value)).resolve() != current.resolve():
            folders.append(Path(str(entry.value)))
    return folders


def previous_run(instance: dg.DagsterInstance, current: "RunRows") -> "RunRows | None":
    """The latest earlier run of the same task set, if the instance knows one."""
    from ...core.compare.nightly import same_task_set
    from ...core.compare.rows import CompareError, load_run

    for folder in _earlier_run_dirs(instance, current.run_dir):
        try:
            candidate = load_run(folder)
        except CompareError:  # a run folder since deleted or emptied
            continue
        if same_task_set(candidate, current):
            return candidate
    return None


@dg.asset(
    group_name=GROUP,
    deps=[SUITE_METRICS],
    check_specs=[REGRESSION_CHECK],
    description="Paired statistics of every variant against the experiment's first, on the run just finished.",
)
def variant_comparison(
    context: dg.AssetExecutionContext, settings: CoderEvalSettings, run_context: dg.ResourceParam[RunContext]
) -> dg.MaterializeResult:
    run_dir = settings.open(context, run_context).folder
    if _single_variant(run_dir) and not _earlier_run_dirs(context.instance, run_dir):
        # Nothing to pair with: done without importing pandas and scipy (a second of every first run).
        return dg.MaterializeResult(
            metadata={"comparison": dg.MetadataValue.md("one variant and no earlier run: nothing to compare yet")},
            check_results=[_check_result(True, {"previous_run": "none"})],
        )
    # Imported here: pandas and scipy would otherwise load with the code location, before every run.
    from ...core.compare.analysis import compare_variants
    from ...core.compare.index import RUN_PAGE
    from ...core.compare.nightly import comparison_metadata, regression_verdict
    from ...core.compare.rows import CompareError, load_run

    try:
        current = load_run(run_dir)
    except CompareError as exc:  # a run that evaluated nothing has nothing to compare and nothing regressed
        return dg.MaterializeResult(
            metadata={"comparison": dg.MetadataValue.md(f"nothing to compare: {exc}")},
            check_results=[_check_result(True, {"previous_run": "this run has no evaluations"})],
        )
    table, rates = comparison_metadata(compare_variants(current))
    before = previous_run(context.instance, current)
    verdict = regression_verdict(before, current)
    page = run_dir / RUN_PAGE
    check_metadata = {
        key: dg.MetadataValue.md(value) if key.endswith("_rows") else value for key, value in verdict.details.items()
    }
    return dg.MaterializeResult(
        metadata={
            "comparison": dg.MetadataValue.md(table),
            **{key: dg.MetadataValue.float(value) for key, value in rates.items()},
            "run_dir": dg.MetadataValue.path(str(run_dir)),
            **({"page": dg.MetadataValue.path(str(page))} if page.is_file() else {}),
        },
        check_results=[_check_result(verdict.passed, check_metadata)],
    )


def _single_variant(run_dir: Path) -> bool:
    try:
        document = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return len(document.get("variants") or []) < 2


def _check_result(passed: bool, metadata: dict[str, Any]) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(check_name=REGRESSION_CHECK.name, passed=passed, metadata=metadata)
