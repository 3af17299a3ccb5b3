"""Benchmark: what the per-evaluation namespaces (file view, network), the egress proxy and the streaming
output cap cost.

1. A namespace's start and end (fresh, not one reused from the spare pool: its holder builds the file
   view), with a network namespace of its own (confined) and without (``open: true``); and taking a
   spare one instead (what an evaluation pays: its sandbox mounted, then let go of).
2. A short command (`true`) plain (process group only) vs. through a tempdir sandbox, entering the
   namespace with nsenter and with its spawner: the per-command overhead.
3. HTTP requests from inside a confined sandbox to a server on the host's loopback, through the egress
   proxy and through an allowed port's forward, vs. the same requests on the host: per request.
4. A 200 MB flood on stdout: wall time, the harness's peak RSS growth and the
   bytes written to TMPDIR (the flood used to land there in full).
5. With ``--baseline-cli``: bench_agentless's rows (one pre_run, one run_command each) through this venv's
   ``coder-eval run`` and through a coder-eval from before confinement, interleaved over ``--trials`` rounds,
   each a fresh process on a fresh instance (the median of each). Target: within 10% of the baseline.

    python bench/bench_containment.py [--commands 200] [--baseline-cli PATH [--rows 1000] [--trials 3]]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agentless import CHECK, PRE, _cli, _project
from coder_eval_dagster.core.models.results import CommandRun
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.sandbox import containment
from coder_eval_dagster.core.sandbox.egress import Gate
from coder_eval_dagster.core.sandbox.holder import SANDBOX_PATH
from coder_eval_dagster.core.sandbox.process import Interrupt, run_shell
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox

# Run inside the sandbox: N GETs of URL (through the proxy variables when PROXIED), one connection each.
REQUESTS = """
import os, sys, time, urllib.request
url, count, proxied = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
for name in ("NO_PROXY", "no_proxy"):  # the loopback is reached directly otherwise
    os.environ.pop(name, None)
opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": os.environ["HTTP_PROXY"]} if proxied else {}))
start = time.perf_counter()
for _ in range(count):
    opener.open(url, timeout=5).read()
print((time.perf_counter() - start) / count)
"""


def _median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.1f} ms"


def namespace_lifetime(folder: Path, times: int, fresh: bool, gate: Gate | None) -> list[float]:
    samples = []
    for index in range(times):
        evaluation = folder / f"e{index}"
        (evaluation / "sandbox").mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        with containment.command_launcher(evaluation, evaluation / "sandbox", gate):
            pass
        containment.release(evaluation)
        if fresh:
            containment.end_spare()
        samples.append(time.perf_counter() - start)
    containment.end_spare()
    return samples


def requests(folder: Path, count: int) -> None:
    """Per-request time of plain HTTP GETs to a server on the host's loopback: on the host, and from inside."""
    import subprocess
    import sys
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    host = subprocess.run([sys.executable, "-c", REQUESTS, url, str(count), "0"], capture_output=True, text=True)
    network = {"network": {"allow": [url.removeprefix("http://").strip("/")]}}
    box = TempdirSandbox(folder / "net" / "sandbox", SandboxConfig.model_validate({"python": None, **network}))
    box.create(folder / "net")
    box.set_phase("pre_run")
    (box.root / "requests.py").write_text(REQUESTS)
    inside = {way: box.run(f"python3 requests.py {url} {count} {way}", 60).stdout for way in ("1", "0")}
    containment.release(folder / "net")
    server.shutdown()
    for what, seconds in (("on the host", host.stdout), ("through the egress proxy", inside["1"])):
        print(f"HTTP GET to the host's loopback, {what}: {float(seconds) * 1000:.2f} ms")
    print(f"HTTP GET to an allowed loopback port, forwarded: {float(inside['0']) * 1000:.2f} ms")


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
    done = run_shell("head -c 200000000 /dev/zero | tr '\\0' x", SANDBOX_PATH, 120, Interrupt(), launcher=launcher)
    seconds = time.perf_counter() - start
    assert done.ok and "bytes omitted" in done.stdout
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
    return seconds, grown, sum(p.stat().st_size for p in scratch.rglob("*") if p.is_file())


def against_baseline(baseline: str, rows: int, trials: int, concurrency: int) -> None:
    """Whole ``coder-eval run`` processes of ``rows`` agentless rows, this venv's and ``baseline``, alternated
    (a shared machine's load drifts: alternating spreads it over both)."""
    seconds: dict[str, list[float]] = {"baseline": [], "confined": []}
    with tempfile.TemporaryDirectory() as workdir:
        task = _project(Path(workdir) / "rows", "rows", rows, PRE, CHECK)
        for _ in range(trials):
            seconds["baseline"].append(_cli(task, Path(workdir), concurrency, executable=baseline)[0])
            seconds["confined"].append(_cli(task, Path(workdir), concurrency)[0])
    median = {way: statistics.median(times) for way, times in seconds.items()}
    for way, times in seconds.items():
        print(f"{rows} rows, {way}: median {median[way]:.2f} s ({', '.join(f'{t:.2f}' for t in times)})")
    print(f"confined vs baseline: {100 * (median['confined'] / median['baseline'] - 1):+.1f}% (target within 10%)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commands", type=int, default=200)
    parser.add_argument("--baseline-cli", help="a coder-eval console script from before confinement")
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    if args.baseline_cli:
        against_baseline(args.baseline_cli, args.rows, args.trials, args.concurrency)
    with tempfile.TemporaryDirectory() as workdir:
        folder = Path(workdir)
        confined = Gate((), ())
        for kind, gate in (("confined network", confined), ("open network", None)):
            print(f"namespace start + end ({kind}):", _median_ms(namespace_lifetime(folder, 20, True, gate)))
            spare = namespace_lifetime(folder, 20, False, gate)
            print(f"namespace taken from the spares + released ({kind}):", _median_ms(spare))
        plain = commands(args.commands, lambda: run_shell("true", folder, 10, Interrupt()))
        print("command, process group only:", _median_ms(plain))
        box = TempdirSandbox(folder / "e" / "sandbox", SandboxConfig.model_validate({"python": None}))
        box.create(folder / "e")
        for way, after in (("nsenter", args.commands + 1), ("its spawner", 0)):
            containment.SPAWNER_AFTER = after
            samples = commands(args.commands, lambda: box.run("true", 10))
            print(f"command, in a tempdir sandbox ({way}):", _median_ms(samples))
            containment.release(folder / "e")
            containment.end_spare()
        start = time.perf_counter()
        box.run("true", 10)  # a fresh namespace and its spawner
        print(f"a fresh namespace, its spawner and one command: {(time.perf_counter() - start) * 1000:.1f} ms")
        requests(folder, 200)
        with containment.command_launcher(folder / "e", box.root, box.gate) as launcher:
            seconds, grown, written = flood(folder, launcher)
        print(f"200 MB flood: {seconds:.2f} s, peak RSS +{grown:.1f} MB, {written} bytes written to TMPDIR")
        containment.release(folder / "e")


if __name__ == "__main__":
    main()
