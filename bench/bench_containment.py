"""Benchmark: what the per-evaluation process namespace and the streaming output cap cost.

1. A namespace's start and end (fresh, not one reused from the spare pool),
   and taking a spare one instead.
2. A short command (`true`) plain (process group only) vs. through a tempdir
   sandbox, entering the namespace with nsenter and with its spawner: the
   per-command overhead.
3. A 200 MB flood on stdout: wall time, the harness's peak RSS growth and the
   bytes written to TMPDIR (the flood used to land there in full).

    python bench/bench_containment.py [--commands 200]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from coder_eval_dagster.core.models.results import CommandRun
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.sandbox import containment
from coder_eval_dagster.core.sandbox.process import run_shell
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox


def _median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.1f} ms"


def namespace_lifetime(folder: Path, times: int, fresh: bool) -> list[float]:
    samples = []
    for index in range(times):
        evaluation = folder / f"e{index}"
        start = time.perf_counter()
        containment.agent_launcher(evaluation, folder)
        containment.release(evaluation)
        if fresh:
            containment.end_spare()
        samples.append(time.perf_counter() - start)
    return samples


def commands(count: int, run: Callable[[], CommandRun]) -> list[float]:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        assert run().ok
        samples.append(time.perf_counter() - start)
    return samples


def flood(folder: Path, launcher: list[str]) -> tuple[float, float, int]:
    scratch = folder / "tmp"  # the harness's TMPDIR for the flood: where captured output used to go
    scratch.mkdir()
    tempfile.tempdir = str(scratch)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    done = run_shell("head -c 200000000 /dev/zero | tr '\\0' x", folder, 120, launcher=launcher)
    seconds = time.perf_counter() - start
    assert done.ok and "bytes omitted" in done.stdout
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
    return seconds, grown, sum(p.stat().st_size for p in scratch.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commands", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        folder = Path(workdir)
        print("namespace start + end:", _median_ms(namespace_lifetime(folder, 20, fresh=True)))
        print("namespace taken from the spares + released:", _median_ms(namespace_lifetime(folder, 20, fresh=False)))
        plain = commands(args.commands, lambda: run_shell("true", folder, 10))
        print("command, process group only:", _median_ms(plain))
        box = TempdirSandbox(folder / "e" / "sandbox", SandboxConfig.model_validate({"python": None}))
        box.create(folder)
        for way, after in (("nsenter", args.commands + 1), ("its spawner", 0)):
            containment.SPAWNER_AFTER = after
            samples = commands(args.commands, lambda: box.run("true", 10))
            print(f"command, in a tempdir sandbox ({way}):", _median_ms(samples))
            containment.release(folder / "e")
            containment.end_spare()
        start = time.perf_counter()
        box.run("true", 10)  # a fresh namespace and its spawner
        print(f"a fresh namespace, its spawner and one command: {(time.perf_counter() - start) * 1000:.1f} ms")
        with containment.command_launcher(folder / "e", folder) as launcher:
            seconds, grown, written = flood(folder, launcher)
        print(f"200 MB flood: {seconds:.2f} s, peak RSS +{grown:.1f} MB, {written} bytes written to TMPDIR")
        containment.release(folder / "e")


if __name__ == "__main__":
    main()
