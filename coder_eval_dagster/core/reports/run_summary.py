"""run.json and run.md: the whole run at a glance."""

from __future__ import annotations

from typing import Any

from ..layout import RUN_VIEWER
from ..models.results import EvaluationResult
from ..suite import SuiteEntry, suite_json
from .junit import failing_criteria


def why_not_passed(task: dict[str, Any]) -> str:
    """One line: the error, or the gating criteria that failed (type, description, score)."""
    if task.get("error"):
        return str(task["error"]).splitlines()[0]
    return "; ".join(failing_criteria(task))


def run_passed(results: list[EvaluationResult], suite: list[SuiteEntry]) -> bool:
    """The run's verdict (and exit code): every task succeeded and every suite threshold was met."""
    return all(r.success for r in results) and all(entry.passed for entry in suite)


def within_expected_share(results: list[EvaluationResult]) -> float | None:
    """Share of budgeted tasks within 1.5x expected_turns (failed ones count as over)."""
    budgeted = [r for r in results if r.expected_turns is not None]
    return sum(bool(r.within_expected_turns) for r in budgeted) / len(budgeted) if budgeted else None


def run_document(
    header: dict[str, Any], results: list[EvaluationResult], skipped: list[str], suite: list[SuiteEntry]
) -> dict[str, Any]:
    ordered = sorted(results, key=lambda r: (r.variant_id, r.task_id, r.replicate))
    return {
        **header,
        "passed": run_passed(results, suite),
        "counts": {status: sum(r.final_status == status for r in results) for status in _statuses(results)},
        "within_expected_turns_share": within_expected_share(results),
        "tasks": [r.summary() for r in ordered],
        "skipped_tasks": skipped,
        "suite": suite_json(suite),
    }


def _statuses(results: list[EvaluationResult]) -> list[str]:
    return sorted({r.final_status for r in results})


def _by_variant(tasks: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        groups.setdefault(task["variant_id"], []).append(task)
    return groups


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def render_run_md(document: dict[str, Any]) -> str:
    lines = [f"# Run {document['run_id']}", ""]
    verdict = "PASSED" if document["passed"] else "FAILED"
    experiment = document.get("experiment") or "none"
    lines += [
        f"**{verdict}** · experiment: {experiment} · started {document['started_at']} · "
        f"finished {document['finished_at']}",
        "",
    ]
    counts = ", ".join(f"{count} {status}" for status, count in document["counts"].items()) or "no tasks"
    lines += [f"Tasks: {counts}.", "", f"Every evaluation, sortable and filterable: [run viewer]({RUN_VIEWER}).", ""]
    share = document.get("within_expected_turns_share")
    if share is not None:
        lines += [f"Within expected turns: {share:.0%} of budgeted tasks.", ""]
    for task in document["tasks"]:
        if task["stopped_early"]:
            remaining = task.get("turns_remaining_at_stop")
            remaining = "?" if remaining is None else remaining  # no max_turns: the saving is unbounded
            lines.append(
                f"> NOTE: {task['task_id']} [{task['variant_id']}] stopped early "
                f"({task['early_stop_reason']}); <= {remaining} turn(s) avoided"
            )
    lines += ["", "| variant | evaluations | passed | pass rate | mean score |", "|---|---|---|---|---|"]
    for variant, tasks in _by_variant(document["tasks"]).items():
        passed = sum(t["success"] for t in tasks)
        mean = sum(t["weighted_score"] for t in tasks) / len(tasks)
        lines.append(f"| {_cell(variant)} | {len(tasks)} | {passed} | {passed / len(tasks):.1%} | {mean:.3f} |")
    lines += [
        "",
        "| variant | task | # | status | score | criteria passed | duration (s) | why |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for task in document["tasks"]:
        gating = [c for c in task["criteria"] if c["gating"]]
        passed = sum(c["passed"] for c in gating)
        report = f"{task['variant_id']}/{task['task_id']}/{task['replicate']:02d}/task.html"
        why = "" if task["success"] else why_not_passed(task)
        lines.append(
            f"| {_cell(task['variant_id'])} | [{_cell(task['task_id'])}]({report}) | {task['replicate']:02d} "
            f"| {task['final_status']} | {task['weighted_score']:.3f} | {passed}/{len(gating)} "
            f"| {task['duration_s']:.2f} | {_cell(why)} |"
        )
    if document["suite"]:
        lines += ["", "## Suite metrics", ""]
        for entry in document["suite"]:
            metrics = entry["metrics"]
            lines.append(
                f"- {entry['base_task_id']} [{entry['variant_id']}] criterion {entry['criterion_index']} "
                f"({entry['criterion_type']}): accuracy {metrics['accuracy']:.3f}, "
                f"macro F1 {metrics['macro_f1']:.3f}"
            )
            for threshold in entry["thresholds"]:
                mark = "met" if threshold["passed"] else "NOT met"
                lines.append(f"  - {threshold['metric']} {threshold['value']:.3f} >= {threshold['minimum']:g}: {mark}")
    if document.get("comparison"):
        comparison = document["comparison"]
        lines += ["", "## Variant comparison", "", f"![success rate per variant]({comparison['figure']})", ""]
        lines += [f"Paired statistics, flips and per-task differences: [{comparison['page']}]({comparison['page']})"]
    if document["skipped_tasks"]:
        lines += ["", "Skipped: " + ", ".join(document["skipped_tasks"])]
    return "\n".join(lines) + "\n"
