"""A small agentless project whose run exercises every report file: a passing task, a failing one, a replayed
agent with tool calls and usage, a dataset task with a suite threshold, two variants, two replicates each.

    pass                 SUCCESS
    fail                 FAILURE (its file is never made; a weight-0 criterion beside it)
    labels/r1, r2, r3    classification_match (suite threshold: accuracy >= 0.5, met) and a run_command
                         that fails on r2
    replay_hello         the shipped replay example: Write, Bash, Edit, tokens and cost

6 row-tasks x 2 variants (base, hint) x 2 replicates = 24 evaluations: 16 SUCCESS, 8 FAILURE.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .helpers import write

ROOT = Path(__file__).parent.parent.parent
EVALUATIONS, SUCCEEDED, FAILED = 24, 16, 8

TASKS = {
    "pass.yaml": """
        task_id: pass
        description: a file that is made
        tags: [smoke]
        agent: {type: none}
        sandbox: {python: null}
        pre_run: [{command: "echo hi > made.txt"}]
        success_criteria:
          - {type: file_exists, path: made.txt, description: made}
        """,
    "fail.yaml": """
        task_id: fail
        description: a file that is never made
        agent: {type: none}
        sandbox: {python: null}
        success_criteria:
          - {type: file_exists, path: nowhere.txt, description: never made}
          - {type: run_command, command: "true", description: informational, weight: 0}
        """,
    "labels.yaml": """
        task_id: labels
        description: a label per row
        agent: {type: none}
        sandbox: {python: null}
        dataset:
          rows:
            - {id: r1, label: a, value: "1"}
            - {id: r2, label: a, value: "0"}
            - {id: r3, label: b, value: "1"}
          stratify_field: label
        pre_run: [{command: "printf %s ${row.label} > label.txt"}]
        success_criteria:
          - type: classification_match
            path: label.txt
            expected_label: "${row.label}"
            allowed_labels: [a, b]
            description: the label file
            suite_thresholds: {accuracy: 0.5}
          - {type: run_command, command: "test ${row.value} -ge 1", description: "row ${row.id} positive"}
        """,
}

EXPERIMENT = """
    experiment_id: ab
    description: two variants
    tasks: ["../tasks/"]
    repeats: 2
    variants:
      - variant_id: base
      - variant_id: hint
        template_sources:
          - type: starter_files
            files: [{path: HINT.md, content: "a hint"}]
    """


def write_project(folder: Path) -> Path:
    """The project under ``folder``; its experiment file's path."""
    for name, text in TASKS.items():
        write(folder / "tasks" / name, text)
    shutil.copytree(ROOT / "tasks" / "replay_hello", folder / "tasks" / "replay_hello")
    return write(folder / "experiments" / "ab.yaml", EXPERIMENT)
