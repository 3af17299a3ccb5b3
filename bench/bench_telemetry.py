"""Benchmark: what telemetry costs on 1,000 agentless rows through `coder-eval run`.

Three ways, each a fresh `coder-eval run` process on a fresh instance,
interleaved over ``--trials`` rounds (the median of each is reported):

- ``baseline``: ``--baseline-cli``, a coder-eval installed from before
  telemetry (skipped when not given);
- ``off``: this venv's coder-eval with no ``OTEL_*`` variable. Target: within
  2% of the baseline;
- ``on``: exporting traces, events and metrics to a local OTLP receiver
  (tests/support/otlp_receiver.py, in this process). Target: within 15% of off.
  The receiver keeps the request bodies and decodes them once the runs are
  timed, as a collector in a process of its own would spare the harness its
  decoding (a Python decoder on the same two cores is not the exporter's cost).

    python bench/bench_telemetry.py [--rows 1000] [--trials 3] [--baseline-cli PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agentless import CHECK, PRE, _cli, _project, children_cpu
from tests.support.otlp_receiver import OtlpReceiver, Received


def _timed(task: Path, work: Path, concurrency: int, env: dict[str, str], cli: str | None) -> tuple[float, float]:
    """One run's wall seconds and CPU seconds (user + system, its whole process tree) with ``env`` over the
    bench's own environment. CPU moves less than wall time when the machine is shared."""
    saved = dict(os.environ)
    os.environ.update(env)
    before = children_cpu()
    try:
        wall = _cli(task, work, concurrency, executable=cli)[0]
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return wall, children_cpu() - before


def _report(way: str, measures: list[tuple[float, float]]) -> tuple[float, float]:
    """Print and return the median wall and CPU seconds of one way."""
    walls, cpus = [m[0] for m in measures], [m[1] for m in measures]
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    listed = ", ".join(f"{t:.2f}" for t in walls)
    print(f"{way}: median {wall:.2f} s wall, {cpu:.2f} s CPU over {len(walls)} ({listed})")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--baseline-cli", help="a coder-eval console script from before telemetry")
    args = parser.parse_args()
    for name in [n for n in os.environ if n.startswith("OTEL_")]:
        del os.environ[name]
    received = Received(deferred=True)
    measures: dict[str, list[tuple[float, float]]] = {"baseline": [], "off": [], "on": []}
    with tempfile.TemporaryDirectory() as tmp, OtlpReceiver(received) as endpoint:
        work = Path(tmp)
        task = _project(work / "rows", "rows", args.rows, PRE, CHECK)
        ways = {"off": {}, "on": {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}}
        for trial in range(args.trials):
            if args.baseline_cli:
                measures["baseline"].append(_timed(task, work, args.concurrency, {}, args.baseline_cli))
            for way in ("off", "on") if trial % 2 == 0 else ("on", "off"):  # neither always runs first
                measures[way].append(_timed(task, work, args.concurrency, ways[way], None))
    received.decode_kept()
    median = {way: _report(way, found) for way, found in measures.items() if found}
    load = os.getloadavg()[0]
    if "baseline" in median:
        print(f"off vs baseline: {_change(median['off'], median['baseline'])} (target within 2%)")
    print(f"on vs off: {_change(median['on'], median['off'])} (target within 15%); load average {load:.1f}")
    paired = [_ratios(on, off) for on, off in zip(measures["on"], measures["off"], strict=True)]
    wall, cpu = (100 * (statistics.median(r[i] for r in paired) - 1) for i in (0, 1))
    print(f"on vs off, the median of each trial's pair: {wall:+.1f}% wall, {cpu:+.1f}% CPU")
    ends = sum(1 for event in received.events if event["name"] == "CoderEval.Task.End")
    runs = len(measures["on"])
    print(f"received per run: {len(received.span_names) // runs} spans, {ends // runs} CoderEval.Task.End events")


def _ratios(measured: tuple[float, float], reference: tuple[float, float]) -> tuple[float, float]:
    """Wall and CPU of one measure over another's (a trial's pair ran minutes apart at most: the machine's
    slow drifts, which move both, cancel)."""
    wall, cpu = (m / r for m, r in zip(measured, reference, strict=True))
    return wall, cpu


def _change(measured: tuple[float, float], reference: tuple[float, float]) -> str:
    wall, cpu = (100 * (ratio - 1) for ratio in _ratios(measured, reference))
    return f"{wall:+.1f}% wall, {cpu:+.1f}% CPU"


if __name__ == "__main__":
    main()
