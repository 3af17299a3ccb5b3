"""Benchmark: the scoring stage of 200 rows with one `llm_judge` each, against a scripted API.

The scripted Messages API (tests/fake_anthropic.py) answers every judge call
after a fixed latency (50 ms). The rows' sandboxes are made first; then the
scoring stage runs exactly as the criteria_scores op runs it: ``score`` over
every evaluation, as wide as the judges (``--judge-concurrency 8``), through
the real anthropic SDK. Target: within 1.5x of rows x latency / concurrency.
The SDK's import (about 1 s, once per process) is timed and printed apart.

    python bench/bench_judges.py [--rows 200] [--latency 0.05] [--judge-concurrency 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TASK = """\
task_id: judged
description: "benchmark row"
agent: {type: none}
sandbox: {python: null}
dataset: {paths: ["rows.jsonl"]}
success_criteria:
  - type: llm_judge
    description: "row ${row.id} graded"
    prompt: "Grade row ${row.id}."
    capture_transcript: false
"""


def _evaluations(folder: Path, rows: int, context: Any) -> list:
    from coder_eval_dagster.core.evaluation import run_pre_run, setup_sandbox
    from coder_eval_dagster.core.resolution import resolve
    from coder_eval_dagster.core.run_spec import RunSpec
    from coder_eval_dagster.core.runs import in_parallel, plan_evaluations

    (folder / "rows.jsonl").write_text("".join(json.dumps({"id": f"r{i:04d}"}) + "\n" for i in range(rows)))
    (folder / "task.yaml").write_text(TASK)
    resolution = resolve(RunSpec(task_paths=[str(folder / "task.yaml")]))
    evaluations = plan_evaluations(resolution.row_tasks, "bench", folder / "run", None, context)
    return in_parallel(lambda e: run_pre_run(setup_sandbox(e)), evaluations, os.cpu_count() or 1, context.interrupt)


def _scoring_seconds(evaluations: list, width: int) -> float:
    from coder_eval_dagster.core.evaluation import score
    from coder_eval_dagster.core.runs import in_parallel

    for evaluation in evaluations:
        evaluation.result.criteria = []
    start = time.perf_counter()
    scored = in_parallel(score, evaluations, width, evaluations[0].context.interrupt)
    elapsed = time.perf_counter() - start
    failed = [e.result.criteria[0].error for e in scored if e.result.criteria[0].error]
    if failed:
        sys.exit(f"{len(failed)} judge call(s) failed, e.g. {failed[0]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--judge-concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from coder_eval_dagster.core.run_context import RunContext
    from tests.support.fake_anthropic import FakeAnthropic, Script

    script = Script([], verdict={"score": 1.0, "rationale": "fine"}, latency_s=args.latency)
    with FakeAnthropic(script) as url, tempfile.TemporaryDirectory() as folder:
        os.environ.update({"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-bench-0000000000"})
        context = RunContext.create("direct", args.judge_concurrency)
        width = max(os.cpu_count() or 1, args.judge_concurrency)  # the scoring op's width
        evaluations = _evaluations(Path(folder), args.rows, context)
        started = time.perf_counter()
        import anthropic  # noqa: F401  (once per process; timed apart from the stage)

        print(f"anthropic SDK import (once per process): {time.perf_counter() - started:.2f} s")
        ideal = args.rows * args.latency / args.judge_concurrency
        print(f"{args.rows} rows, {args.latency * 1000:.0f} ms per call, judge concurrency {args.judge_concurrency}")
        print(f"ideal {ideal:.2f} s; target <= {1.5 * ideal:.2f} s")
        for attempt in range(1, args.repeat + 1):
            seconds = _scoring_seconds(evaluations, width)
            ratio = seconds / ideal
            print(f"run {attempt}: {seconds:.2f} s ({ratio:.2f}x ideal), max in flight {script.max_in_flight}")
            script.max_in_flight = 0


if __name__ == "__main__":
    main()
