"""experiment.md and each variant.md: the Markdown coder_eval writes beside experiment.json and variant.json.

coder_eval's ``report RUN`` shows experiment.md when there is one (else it
reads experiment.json as a run summary, which fails); a user coming from it
finds the variants side by side there, and each variant's tasks in its
folder. Both are rendered from the same records as the JSON files.
"""

from __future__ import annotations

from ..layout import RUN_MD, VARIANT_MD
from ..models.report import ExperimentResult, VariantAggregate
from .run_summary import md_cell, score_text


def render_experiment_md(experiment: ExperimentResult) -> str:
    lines = [f"# Experiment {experiment.experiment_id}", ""]
    if experiment.description:
        lines += [experiment.description, ""]
    lines += [
        "| variant | tasks | succeeded | failed | errors | average score | average duration (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for variant_id in experiment.variant_ids:
        a = experiment.variant_aggregates[variant_id]
        lines.append(
            f"| [{md_cell(variant_id)}]({variant_id}/{VARIANT_MD}) | {a.tasks_run} | {a.tasks_succeeded} | "
            f"{a.tasks_failed} | {a.tasks_error} | {score_text(a.average_score)} | {a.average_duration:.1f} |"
        )
    lines += ["", "## Tasks", "", "| task | " + " | ".join(map(md_cell, experiment.variant_ids)) + " | best |"]
    lines.append("|---|" + "---|" * len(experiment.variant_ids) + "---|")
    for summary in experiment.task_summaries:
        by_variant = {result.variant_id: result for result in summary.variant_results}
        cells = [
            f"{score_text(r.weighted_score)} ({r.final_status})" if (r := by_variant.get(v)) else "–"
            for v in experiment.variant_ids
        ]
        best = "tie" if summary.is_tie else summary.best_variant
        lines.append(f"| {md_cell(summary.task_id)} | " + " | ".join(cells) + f" | {md_cell(best)} |")
    return "\n".join([*lines, "", f"Every evaluation, with why it did not pass: [{RUN_MD}]({RUN_MD}).", ""])


def render_variant_md(aggregate: VariantAggregate) -> str:
    lines = [
        f"# Variant {aggregate.variant_id}",
        "",
        f"{aggregate.tasks_run} tasks: {aggregate.tasks_succeeded} succeeded, {aggregate.tasks_failed} failed, "
        f"{aggregate.tasks_error} errors; average score {score_text(aggregate.average_score)}.",
        "",
        "| task | replicates | status | score | duration (s) |",
        "|---|---|---|---|---|",
    ]
    for r in aggregate.results:
        lines.append(
            f"| {md_cell(r.task_id)} | {r.replicate_count} | {r.final_status} | {score_text(r.weighted_score)} | "
            f"{r.duration_seconds:.1f} |"
        )
    return "\n".join([*lines, ""])
