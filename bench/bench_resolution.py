"""Benchmark: `coder-eval validate` and `coder-eval list` on a 10,000-row dataset task.

Runs the installed console script as a subprocess (start-up included), three
times each, and prints the best and median wall times. Target: under 2 s each.

    python bench/bench_resolution.py [--rows 10000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASK = """\
task_id: big_dataset
description: "Classify each row"
initial_prompt: "Classify: ${row.text}"
agent: {type: claude-code}
dataset:
  paths: ["rows.jsonl"]
  stratify_field: label
success_criteria:
  - type: classification_match
    path: label.txt
    expected_label: "${row.label}"
    allowed_labels: [positive, negative, neutral]
    description: "label of ${row.id}"
    suite_thresholds: {accuracy: 0.8, recall.positive: 0.7}
  - type: command_executed
    tool_name: Bash
    command_pattern: "classify --id ${row.id}"
    description: "ran the classifier"
  - type: file_exists
    path: label.txt
    description: "wrote a label"
"""


def _make_task(folder: Path, rows: int) -> Path:
    labels = ["positive", "negative", "neutral"]
    with (folder / "rows.jsonl").open("w") as handle:
        for index in range(rows):
            handle.write(
                json.dumps({"id": f"row-{index:05d}", "text": f"text {index}", "label": labels[index % 3]}) + "\n"
            )
    path = folder / "task.yaml"
    path.write_text(TASK)
    return path


def _time(command: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cli = shutil.which("coder-eval") or str(Path(sys.executable).parent / "coder-eval")
    with tempfile.TemporaryDirectory() as tmp:
        task = _make_task(Path(tmp), args.rows)
        for name in ("validate", "list"):
            times = _time([cli, name, str(task)], args.repeats)
            print(f"{name:8s} {args.rows} rows: best {min(times):.2f} s, median {statistics.median(times):.2f} s")


if __name__ == "__main__":
    main()
