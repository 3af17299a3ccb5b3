"""A JUnit XML report of a run, for CI systems: one testcase per evaluation.

A FAILED (or TIMEOUT, over-budget) evaluation is a ``<failure>`` listing its
failing gating criteria; an ERROR evaluation is an ``<error>`` with its
message. Suites are the run's variants.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any


def failing_criteria(task: dict[str, Any]) -> list[str]:
    return [
        f"{c['type']} \u201c{c['description']}\u201d score {c['score']:.2f}" + (f": {c['error']}" if c["error"] else "")
        for c in task["criteria"]
        if c["gating"] and not c["passed"] and not c.get("advisory")
    ]


def _testcase(suite: ET.Element, task: dict[str, Any]) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        classname=task["variant_id"],
        name=f"{task['task_id']}#{task['replicate']:02d}",
        time=f"{task['duration_s']:.3f}",
    )
    status = task["final_status"]
    if status == "ERROR":
        error = ET.SubElement(case, "error", type=status, message=(task.get("error") or "error").splitlines()[0])
        error.text = task.get("error") or ""
    elif status != "SUCCESS":
        failing = failing_criteria(task)
        message = task.get("error") or "; ".join(failing) or status
        failure = ET.SubElement(case, "failure", type=status, message=message.splitlines()[0])
        failure.text = "\n".join(failing)


def junit_xml(document: dict[str, Any]) -> str:
    tasks = document["tasks"]
    root = ET.Element("testsuites", name=f"coder-eval {document['run_id']}")
    for variant in dict.fromkeys(t["variant_id"] for t in tasks):
        own = [t for t in tasks if t["variant_id"] == variant]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=variant,
            tests=str(len(own)),
            failures=str(sum(t["final_status"] not in ("SUCCESS", "ERROR") for t in own)),
            errors=str(sum(t["final_status"] == "ERROR" for t in own)),
            skipped="0",
            time=f"{sum(t['duration_s'] for t in own):.3f}",
            timestamp=document["started_at"].rstrip("Z"),
        )
        for task in own:
            _testcase(suite, task)
    for key in ("tests", "failures", "errors"):
        root.set(key, str(sum(int(s.get(key, "0")) for s in root)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(document: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(document), encoding="utf-8")
