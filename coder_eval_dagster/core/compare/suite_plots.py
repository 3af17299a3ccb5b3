"""suite_metrics' float metadata, which Dagster plots over the asset's materializations."""

from __future__ import annotations

from ..models.results import EvaluationResult


def suite_float_metadata(results: list[EvaluationResult]) -> dict[str, float | None]:
    """Pass rate and mean score (ERROR excluded) and mean cost per evaluation.

    Pass rate and mean score with no evaluation behind them (every one an
    ERROR) are None, a gap in the plot, not a fall to 0; the cost with none
    reported is 0.0 (nothing was spent that anyone knows of).
    """
    valid = [r for r in results if r.final_status != "ERROR"]
    costs = [r.agent_cost_usd for r in results if r.agent_cost_usd is not None]
    return {
        "pass_rate": sum(r.success for r in valid) / len(valid) if valid else None,
        "mean_score": sum(r.weighted_score for r in valid) / len(valid) if valid else None,
        "cost_per_task": sum(costs) / len(costs) if costs else 0.0,
    }
