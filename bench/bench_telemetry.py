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

from bench.bench_agentless import CHECK, PRE, _cli, _project
from tests.support.otlp_receiver import OtlpReceiver, Received


def _timed(task: Path, work: Path, concurrency: int, env: dict[str, str], cli: str | None) -> float:
    """One run's wall seconds with ``env`` over the bench's own environment."""
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        return _cli(task, work, concurrency, executable=cli)[0]
    finally:
        os.environ.clear()
        os.environ.update(saved)


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
    seconds: dict[str, list[float]] = {"baseline": [], "off": [], "on": []}
    with tempfile.TemporaryDirectory() as tmp, OtlpReceiver(received) as endpoint:
        work = Path(tmp)
        task = _project(work / "rows", "rows", args.rows, PRE, CHECK)
        for _ in range(args.trials):
            if args.baseline_cli:
                seconds["baseline"].append(_timed(task, work, args.concurrency, {}, args.baseline_cli))
            seconds["off"].append(_timed(task, work, args.concurrency, {}, None))
            seconds["on"].append(_timed(task, work, args.concurrency, {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, None))
    received.decode_kept()
    median = {way: statistics.median(times) for way, times in seconds.items() if times}
    for way, times in seconds.items():
        if times:
            print(f"{way}: median {median[way]:.2f} s over {len(times)} ({', '.join(f'{t:.2f}' for t in times)})")
    if "baseline" in median:
        print(f"off vs baseline: {100 * (median['off'] / median['baseline'] - 1):+.1f}% (target within 2%)")
    print(f"on vs off: {100 * (median['on'] / median['off'] - 1):+.1f}% (target within 15%)")
    ends = sum(1 for event in received.events if event["name"] == "CoderEval.Task.End")
    runs = len(seconds["on"])
    print(f"received per run: {len(received.span_names) // runs} spans, {ends // runs} CoderEval.Task.End events")


if __name__ == "__main__":
    main()
