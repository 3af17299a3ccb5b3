"""Benchmark: what the docker driver adds per evaluation, against tempdir.

The same agentless rows (one pre_run, one run_command criterion; see
bench_agentless.py) run through the real CLI twice, under `driver: docker`
(network none) and under `driver: tempdir`, at the same --concurrency. Two
figures per evaluation: the added wall time of the run divided by the rows,
and, measured alone, one container's life (create+start at sandbox setup,
removal at the end) and one exec of `true` (medians of 20). Target: under
0.5 s added per evaluation. Needs an engine and the sandbox image
(`coder-eval sandbox build`).

    python bench/bench_docker.py [--rows 100] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import yaml
from bench_agentless import CHECK, PRE, _cli, _project, _run_seconds, newest_run

SANDBOXES = {"docker": "{driver: docker, network: none, python: null}", "tempdir": "{python: null}"}


def _run(workdir: Path, driver: str, rows: int, concurrency: int) -> float:
    """Seconds of one run (run.json) under ``driver``; every row must pass."""
    task = _project(workdir / driver, f"bench-{driver}", rows, PRE, CHECK)
    task.write_text(task.read_text().replace("sandbox: {python: null}", f"sandbox: {SANDBOXES[driver]}"))
    _cli(task, workdir, concurrency)
    runs = workdir / "runs"
    statuses = [json.loads(p.read_text())["final_status"] for p in newest_run(runs).glob("**/task.json")]
    assert statuses == ["SUCCESS"] * rows, f"{driver}: {statuses.count('SUCCESS')} of {rows} rows passed"
    return _run_seconds(runs)


def _container_cycle(workdir: Path, times: int = 20) -> tuple[float, float]:
    """Medians of (container create+start+remove, one exec of `true`) through DockerSandbox."""
    from coder_eval_dagster.core.models.sandbox import SandboxConfig
    from coder_eval_dagster.core.sandbox import open_sandbox

    config = SandboxConfig.model_validate(yaml.safe_load(SANDBOXES["docker"]))
    cycles, execs = [], []
    for index in range(times):
        sandbox = open_sandbox(workdir / "cycle" / str(index) / "sandbox", config)
        sandbox.root.mkdir(parents=True)
        start = time.perf_counter()
        sandbox.container.id()
        started = time.perf_counter()
        assert sandbox.run("true", 10).ok
        ran = time.perf_counter()
        sandbox.close()
        cycles.append(started - start + time.perf_counter() - ran)
        execs.append(ran - started)
    return statistics.median(cycles), statistics.median(execs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-docker-") as scratch:
        workdir = Path(scratch)
        warm = _project(workdir / "warm", "warm", 1, PRE, CHECK)
        _cli(warm, workdir, 1)  # the instance's databases, once
        tempdir, docker = (_run(workdir, driver, args.rows, args.concurrency) for driver in ("tempdir", "docker"))
        cycle, one_exec = _container_cycle(workdir)
    print(f"{args.rows} rows at --concurrency {args.concurrency}: tempdir {tempdir:.2f} s, docker {docker:.2f} s")
    print(f"added per evaluation: {(docker - tempdir) / args.rows:.3f} s of run wall time")
    print(f"alone: container create+start+remove {cycle:.3f} s, one exec of `true` {one_exec:.3f} s (medians)")


if __name__ == "__main__":
    main()
