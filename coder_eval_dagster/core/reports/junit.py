"""A JUnit XML report of a run, for CI systems, shaped as coder_eval writes it.

One testsuite per variant, one testcase per evaluation, named
``<task_id>[NN]`` with the task id's base (``-`` as ``_``) as its class. An
evaluation that did not succeed is a ``<failure>`` (``message`` its status)
listing every gating criterion as ``[PASS]``/``[FAIL]``; an ERROR is an
``<error>`` with its message.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from ..layout import replicate_name, write_atomically
from ..models.report import RunSummary, TaskRow
from ..models.results import CriterionResult


def _criterion_line(criterion: CriterionResult) -> str:
    if criterion.passed:
        return f"[PASS] {criterion.type}: {criterion.description}"
    line = f"[FAIL] {criterion.type}: score {criterion.score:.2f} < threshold {criterion.pass_threshold:g} \u2014 "
    return (
        line
        + criterion.description
        + "".join(f"\n{text}" for text in (criterion.error, criterion.details_text) if text)
    )


def _testcase(suite: ET.Element, row: TaskRow) -> None:
    base = (row.base_task_id or row.task_id.split("/")[0]).replace("-", "_")
    case = ET.SubElement(
        suite,
        "testcase",
        name=f"{row.task_id}[{replicate_name(row.replicate_index)}]",
        classname=base,
        time=f"{row.duration:.3f}",
    )
    properties = ET.SubElement(case, "properties")
    for name, value in (
        ("model_used", row.model_used),
        ("weighted_score", row.weighted_score),
        ("visible_turns", row.visible_turns),
    ):
        ET.SubElement(properties, "property", name=name, value="" if value is None else str(value))
    if row.category == "error":
        error = ET.SubElement(case, "error", type=row.status, message=(row.error_message or row.status).splitlines()[0])
        error.text = row.error_message or ""
    elif not row.success:
        failure = ET.SubElement(case, "failure", type=row.status, message=row.status)
        lines = [row.error_message] if row.error_message else []
        failure.text = "\n".join(lines + [_criterion_line(c) for c in row.criteria if c.gating and not c.advisory])


def junit_xml(report: RunSummary) -> str:
    rows = report.task_results
    root = ET.Element("testsuites", name=report.run_id, time=f"{report.total_duration_seconds:.3f}")
    for variant in dict.fromkeys(row.variant_id for row in rows):
        own = [row for row in rows if row.variant_id == variant]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=variant,
            tests=str(len(own)),
            failures=str(sum(not row.success and row.category != "error" for row in own)),
            errors=str(sum(row.category == "error" for row in own)),
            skipped="0",
            time=f"{sum(row.duration for row in own):.3f}",
            timestamp=report.start_time.rstrip("Z"),
        )
        for row in own:
            _testcase(suite, row)
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(sum(int(s.get(key, "0")) for s in root)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(report: RunSummary, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, junit_xml(report))
