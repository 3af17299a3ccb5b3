"""Benchmark: the cost of refusing hostile inputs (issue 15, items 3 and 4).

1. `coder-eval validate` on a 497-byte billion-laughs task file (9 levels of
   9 aliases: 387 million values once expanded), as a subprocess: wall time
   and the child's peak RSS.
2. The same on a plain 8,000-row inline dataset task (no aliases), for scale.
3. A `file_contains` criterion on a 1 GiB file (sparse): wall time and the
   peak of Python allocations while it runs.

    python bench/bench_inputs.py
"""

from __future__ import annotations

import itertools
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import yaml


def billion_laughs(levels: int = 9, width: int = 9) -> str:
    """A task file whose level n holds ``width`` aliases of level n - 1: width**levels values."""
    names = [f"l{level}" for level in range(levels)]
    lines = ["task_id: t", f"{names[0]}: &{names[0]} [{', '.join(['lol'] * width)}]"]
    lines += [f"{name}: &{name} [{', '.join([f'*{below}'] * width)}]" for below, name in itertools.pairwise(names)]
    return "\n".join(lines) + "\n"


BOMB = billion_laughs()


def validate_child(path: Path) -> tuple[float, float, str]:
    """Seconds, the child's peak RSS in MiB, and its first stderr line."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "coder_eval_dagster.cli", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    seconds = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return seconds, peak_mib, (done.stderr or done.stdout).splitlines()[0]


def criterion_on_huge_file(folder: Path) -> tuple[float, float, str]:
    from pydantic import TypeAdapter

    from coder_eval_dagster.core.check_context import CheckContext
    from coder_eval_dagster.core.criteria import criterion_union
    from coder_eval_dagster.core.models.sandbox import SandboxConfig
    from coder_eval_dagster.core.run_context import RunContext
    from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox
    from coder_eval_dagster.core.scoring import run_check

    box = TempdirSandbox(folder / "sandbox", SandboxConfig(python=None))
    box.root.mkdir()
    with (box.root / "huge.txt").open("wb") as stream:
        stream.write(b"START")
        stream.truncate(1 << 30)
    spec = {"type": "file_contains", "path": "huge.txt", "includes": ["START"], "description": "d"}
    criterion = TypeAdapter(criterion_union()).validate_python(spec)
    tracemalloc.start()
    started = time.perf_counter()
    outcome = run_check(criterion, CheckContext(box, folder, None, run=RunContext.create()))
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] / (1 << 20)
    tracemalloc.stop()
    return seconds, peak, f"score {outcome.score}, {outcome.details.get('truncated')}"


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        bomb = base / "bomb.yaml"
        bomb.write_text(BOMB)
        rows = [{"id": f"r{i}", "x": i} for i in range(8000)]
        task = {"task_id": "t", "description": "d", "initial_prompt": "${row.x}", "dataset": {"rows": rows}}
        task["success_criteria"] = [{"type": "file_exists", "path": "a", "description": "d"}]
        plain = base / "plain.yaml"
        plain.write_text(yaml.safe_dump(task))
        seconds, peak, line = validate_child(bomb)
        print(f"billion laughs ({len(BOMB)} bytes): {seconds:.2f} s, peak RSS {peak:.0f} MiB: {line}")
        seconds, peak, line = validate_child(plain)
        print(f"8,000 inline rows ({plain.stat().st_size} bytes): {seconds:.2f} s, peak RSS {peak:.0f} MiB: {line}")
        seconds, peak, line = criterion_on_huge_file(base)
        print(f"file_contains on 1 GiB: {seconds:.2f} s, peak allocations {peak:.0f} MiB: {line}")


if __name__ == "__main__":
    main()
