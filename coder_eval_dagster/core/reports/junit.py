"""A JUnit XML report of a run, for CI systems, shaped as coder_eval writes it.

One testsuite per variant, one testcase per evaluation, named
``<task_id>[NN]`` with its task file's stem as its class. An evaluation that
did not succeed is a ``<failure>`` (``message`` its status) listing every
gating criterion as ``[PASS]``/``[FAIL]``, then each informational one
(weight 0) as ``[INFO]``; an ERROR is an ``<error>`` with its
message. Then, as coder_eval adds them: a ``skipped`` testsuite (a task file
the run left out, as ``<skipped>``; ours adds a sequential A/B's stop) and a
``suite-gates`` testsuite (a testcase per dataset suite and variant with
suite thresholds, a ``<failure>`` listing each threshold not met; ours adds
the flaky-rows gate, the run-wide budget and, for a run failing on nothing
else, ``run``), so a run that fails only on a gate is not green in CI. An
evaluation's run-time notes (its warnings) are its ``<system-out>``, never a
failure. Every count is counted from the elements written.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from itertools import groupby
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from ..layout import replicate_name, write_output
from ..models.report import RunSummary, SkippedTask, TaskRow
from ..models.results import CriterionResult
from .notes import budget_not_run, run_time_notes, sequential_not_run, threshold_figures, verdict_reasons
from .shown_text import criterion_score, one_line

GATES = "suite-gates"
# ElementTree writes control characters as they are, which is not XML 1.0: they are dropped (an agent's output)
_NOT_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _safe(text: str) -> str:
    return _NOT_XML.sub("", text)


def _criterion_line(criterion: CriterionResult) -> str:
    if criterion.passed:
        return f"[PASS] {criterion.type}: {criterion.description}"
    threshold = f"{criterion.pass_threshold:g}"
    line = f"[FAIL] {criterion.type}: score {criterion_score(criterion)} < threshold {threshold} \u2014 "
    return (
        line
        + criterion.description
        + "".join(f"\n{text}" for text in (criterion.error, criterion.details_text) if text)
    )


def _informational_line(criterion: CriterionResult) -> str:
    """A weight-0 criterion, labelled as coder_eval labels it: checked and shown, never the failure."""
    return f"[INFO] {criterion.type}: score {criterion_score(criterion)} \u2014 {criterion.description}"


def _testcase(suite: ET.Element, row: TaskRow) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        name=_safe(f"{row.task_id}[{replicate_name(row.replicate_index)}]"),
        classname=_safe(Path(row.task_path).stem if row.task_path else row.variant_id),
        time=f"{row.duration:.3f}",
    )
    properties = {
        "model_used": row.model_used,
        "weighted_score": row.weighted_score,
        "total_cost_usd": row.total_cost_usd,
        "total_tokens": row.total_tokens,
        "visible_turns": row.visible_turns,
    }
    if any(value is not None for value in properties.values()):
        element = ET.SubElement(case, "properties")
        for name, value in properties.items():
            if value is not None:
                ET.SubElement(element, "property", name=name, value=_safe(str(value)))
    if row.category == "error":
        message = one_line(row.error_message or row.status)
        error = ET.SubElement(case, "error", type=row.status, message=_safe(message))
        error.text = _safe(row.error_message or "")
    elif not row.success:
        failure = ET.SubElement(case, "failure", type=row.status, message=row.status)
        lines = [row.error_message] if row.error_message else []
        lines += [_criterion_line(c) for c in row.criteria if c.gating and not c.advisory]
        lines += [_informational_line(c) for c in row.criteria if not c.gating]
        failure.text = _safe("\n".join(lines))
    notes = run_time_notes(row)
    if notes:  # a passing evaluation's too: stopped at max_tool_calls, over a soft budget (never a failure)
        ET.SubElement(case, "system-out").text = _safe("\n".join(f"{note.kind}: {note.text}" for note in notes))


def _skipped_case(suite: ET.Element, skipped: SkippedTask) -> None:
    """A left-out task file, named by its path without suffix (two ``task.yaml`` in two folders stay two)."""
    name = str(PurePosixPath(skipped.path.replace("\\", "/")).with_suffix(""))
    case = ET.SubElement(suite, "testcase", name=_safe(name), classname="skipped")
    ET.SubElement(case, "skipped", message=_safe(skipped.reason))


class Gate(NamedTuple):
    """A testcase of the suite-gates testsuite: failing when ``unmet`` lists anything."""

    name: str
    unmet: list[str]
    message: str = "suite thresholds not met"


def _gate_case(suite: ET.Element, gate: Gate) -> None:
    case = ET.SubElement(suite, "testcase", name=_safe(gate.name), classname=GATES)
    if gate.unmet:
        failure = ET.SubElement(case, "failure", message=gate.message)
        failure.text = _safe("\n".join(gate.unmet))


def _sequential_case(suite: ET.Element, why: str) -> None:
    """A sequential A/B's stop: evaluations left out by design, so skipped (the run does not fail on it)."""
    case = ET.SubElement(suite, "testcase", name="sequential-stop", classname="skipped")
    ET.SubElement(case, "skipped", message=_safe(why))


def _suite_gates(report: RunSummary) -> list[Gate]:
    """Per dataset suite and variant with thresholds, the thresholds not met; then the flaky-rows gate and the
    run-wide budget (the evaluations it left out fail the run)."""
    gated = [entry for entry in report.suite if entry.get("thresholds")]

    def suite_of(entry: dict[str, Any]) -> tuple[str, str]:
        return entry["variant_id"], entry["base_task_id"]

    gates = [
        Gate(
            f"{variant}/{suite}",
            [
                f"{t['metric']}: {' < '.join(threshold_figures(t))}"
                for entry in entries
                for t in entry["thresholds"]
                if not t["passed"]
            ],
        )
        for (variant, suite), entries in groupby(sorted(gated, key=suite_of), key=suite_of)
    ]
    flaky = report.flaky_gate
    if flaky is not None:
        unmet = [] if flaky["passed"] else [f"flaky rows: {flaky['share']:.3f} > {flaky['max_share']:g}"]
        gates.append(Gate("flaky-rows", unmet))
    if report.budget is not None:
        left = budget_not_run(report)
        gates.append(Gate("run-budget", [left] if left else [], "evaluations not run"))
    return gates


def _gates(report: RunSummary) -> list[Gate]:
    """The suite gates; and when the run failed with nothing else failing (an invalid task file left out), a
    failing ``run`` testcase saying why: CI's verdict is run.json's."""
    gates = _suite_gates(report)
    green = all(row.success for row in report.task_results) and not any(gate.unmet for gate in gates)
    if green and not report.passed:
        gates.append(Gate("run", verdict_reasons(report), "the run failed"))
    return gates


def _counted(element: ET.Element, cases: list[ET.Element]) -> None:
    def having(child: str) -> str:
        return str(sum(case.find(child) is not None for case in cases))

    element.set("tests", str(len(cases)))
    element.set("failures", having("failure"))
    element.set("errors", having("error"))
    element.set("skipped", having("skipped"))


def junit_xml(report: RunSummary) -> str:
    rows = report.task_results
    root = ET.Element("testsuites", name=report.run_id, time=f"{report.total_duration_seconds:.3f}")
    for variant in dict.fromkeys(row.variant_id for row in rows):
        own = [row for row in rows if row.variant_id == variant]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=_safe(variant),
            time=f"{sum(row.duration for row in own):.3f}",
            timestamp=report.start_time.rstrip("Z"),
        )
        for row in own:
            _testcase(suite, row)
    stopped = sequential_not_run(report)
    if report.skipped_tasks or stopped:
        suite = ET.SubElement(root, "testsuite", name="skipped")
        for skipped in report.skipped_tasks:
            _skipped_case(suite, skipped)
        if stopped:
            _sequential_case(suite, stopped)
    gates = _gates(report)
    if gates:
        suite = ET.SubElement(root, "testsuite", name=GATES)
        for gate in gates:
            _gate_case(suite, gate)
    for suite in root:
        _counted(suite, suite.findall("testcase"))
    _counted(root, list(root.iter("testcase")))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(report: RunSummary, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_output(path, junit_xml(report))
