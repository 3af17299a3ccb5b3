"""suite_metrics' float metadata, which Dagster plots over the asset's materializations."""

from __future__ import annotations

from ..models.results import EvaluationResult


def suite_float_metadata(results: list[EvaluationResult]) -> dict[str, float]:
    """Pass rate and mean score (ERROR excluded) and mean cost per evaluation.

    A figure with no evaluation behind it (every one ERROR, or no cost
    reported) is 0.0, so each materialization has a point on every plot.
    """
    valid = [r for r in results if r.final_status != "ERROR"]
    costs = [r.agent_cost_usd for r in results if r.agent_cost_usd is not None]
    return {
        "pass_rate": sum(r.success for r in valid) / len(valid) if valid else 0.0,
        "mean_score": sum(r.weighted_score for r in valid) / len(valid) if valid else 0.0,
        "cost_per_task": sum(costs) / len(costs) if costs else 0.0,
    }
