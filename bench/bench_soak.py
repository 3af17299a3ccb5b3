"""Benchmark: the 30-run soak (issue 25). Does one instance stay as fast after many runs?

N runs (each a fresh process of the installed `coder-eval run`) of the same
R-row agentless dataset task (bench_agentless.py's: one pre_run, one
run_command) on one DAGSTER_HOME and one runs dir:

1. Run times: the wall time of each process and the run's own time
   (run.json); first, last, the median of the last 5, and last-5 median /
   first. Target: <= 1.1. The instance's size after each run.
2. The Dagster UI on that instance, in the headless Chromium of the UI tests,
   served by a real dagster-webserver on the project's code location: the
   asset page (overview, until the latest materialization shows) and the
   partitions page (until the materialized count and the first key show),
   median of 3 loads after one warm-up load; after the first run (a fresh
   instance) and after the last (soaked), and on a second fresh instance
   after the soak, to see how much the machine's load moved meanwhile.
   Target: soaked / fresh <= 1.2.
3. Then 3 more runs on the soaked instance, alternated with runs on 3 new
   fresh instances: soaked / fresh at the same moment, as the machine's
   speed drifts during a soak (bench_warm_start.py alternates likewise).

``--postgres``: each instance (the soaked one, the fresh one after it) on a
fresh PostgreSQL server from Debian's binaries; no alternated runs then.

    python bench/bench_soak.py [--runs 30] [--rows 1000] [--concurrency 2] [--postgres]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agentless import CHECK, PRE, _cli, _project, _run_seconds, children_cpu
from bench.bench_instance_size import KB, checkpoint, folder_bytes, postgres_home
from tests.support.browser import NO_COMMUNITY_POPUP, Chromium
from tests.support.dagster_services import DagsterServices

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "coder-eval")  # the installed console script, not one on PATH
TASK_ID = "soak"
RUN_TARGET, PAGE_TARGET, LOADS, PAIRS = 1.1, 1.2, 3, 3
TEXT = "document.body ? document.body.innerText : ''"
# What each page shows once its data has come (Dagster 1.13's production build has no data-testid):
# the overview, the latest materialization's partition key; the partitions page, its status counts and first key.
PAGES = {
    "asset page": (
        "/assets/sandbox_runs",
        f"(t => t.includes('Latest materialization') && /{TASK_ID}\\/r\\d+\\|default/.test(t))({TEXT})",
    ),
    "partitions page": (
        "/assets/sandbox_runs?view=partitions",
        f"(t => /Materialized \\([1-9][\\d,]*\\)/.test(t) && t.includes('{TASK_ID}/r00000'))({TEXT})",
    ),
}


class Soak:
    """One instance and one runs dir that every run of the soak shares, with what each run took."""

    def __init__(self, work: Path, rows: int, concurrency: int, home: Path | None = None) -> None:
        self.work, self.rows, self.concurrency = work, rows, concurrency
        # The CLI gives a new home coder-eval's defaults on first use, as a user's first run does; ``home``: one
        # prepared (on PostgreSQL).
        self.home = home or work / "home"
        self.task = _project(work / "task", TASK_ID, rows, PRE, CHECK)
        self.wall: list[float] = []
        self.inside: list[float] = []
        self.cpu: list[float] = []
        self.size: list[int] = []
        self.rss: list[float] = []

    def run(self) -> None:
        """One `coder-eval run` of the task on the shared instance, and what it took and left."""
        before = children_cpu()
        wall, rss = _cli(self.task, self.work, self.concurrency, executable=CLI, home=self.home)
        self.cpu.append(children_cpu() - before)
        self.wall.append(wall)
        self.rss.append(rss)
        self.inside.append(_run_seconds(self.work / "runs"))
        self.size.append(folder_bytes(self.home))
        print(
            f"  run {len(self.wall):2d}: {wall:6.2f} s wall, {self.inside[-1]:6.2f} s run.json, "
            f"{self.cpu[-1]:6.2f} s CPU, "
            f"peak RSS {rss:4.0f} MB, instance {self.size[-1] / KB / KB:6.1f} MB",
            flush=True,
        )


def page_loads(soak: Soak, label: str) -> dict[str, float]:
    """Median seconds of each page on the instance, served as `coder-eval dev` would serve it."""
    env = {"CODER_EVAL_TASK_PATHS": str(soak.task.parent), "CODER_EVAL_RUNS_DIR": str(soak.work / "runs")}
    logs = soak.work / f"logs-{label}"
    with (
        DagsterServices(soak.home, ROOT / "workspace.yaml", env, logs, daemon=False) as services,
        Chromium() as browser,
    ):
        browser.call("Page.enable")
        browser.call("Page.addScriptToEvaluateOnNewDocument", source=NO_COMMUNITY_POPUP)
        medians = {}
        for page, (path, ready) in PAGES.items():
            url = f"http://127.0.0.1:{services.port}{path}"
            open_page(browser, url, ready)  # warm-up: the browser's cache, the webserver's code location
            medians[page] = statistics.median(open_page(browser, url, ready) for _ in range(LOADS))
    print(f"  {label}: " + ", ".join(f"{page} {seconds:.2f} s" for page, seconds in medians.items()), flush=True)
    return medians


def open_page(browser: Chromium, url: str, ready: str) -> float:
    """Seconds from navigating to ``url`` until ``ready`` holds, by the page's own clock (performance.now()
    counts from the navigation's start), so polling from here adds at most one poll interval."""
    browser.call("Page.navigate", url="about:blank")
    browser.wait_for("location.href === 'about:blank'", timeout=10, every=0.02)
    browser.call("Page.navigate", url=url)
    return float(browser.wait_for(f"{ready} && performance.now()", timeout=120, every=0.02)) / 1000


def report_runs(soak: Soak) -> None:
    """First, last, the median of the last five against the first, and against run 2 and the median of the first
    five: run 1 is the only one with no earlier run to compare with (variant_comparison skips pandas and scipy
    then), and a single run is noisy on a shared machine."""
    for name, times in (("wall", soak.wall), ("run.json", soak.inside), ("CPU", soak.cpu)):
        head, tail = statistics.median(times[:5]), statistics.median(times[-5:])
        second = times[1] if len(times) > 1 else times[0]
        print(
            f"{name:8s}: first {times[0]:.2f} s, last {times[-1]:.2f} s, median of the last 5 {tail:.2f} s: "
            f"/ first {tail / times[0]:.2f} (target <= {RUN_TARGET}), / run 2 ({second:.2f} s) {tail / second:.2f}, "
            f"/ median of the first 5 ({head:.2f} s) {tail / head:.2f}; {_trend(times)}"
        )
    grown = (soak.size[-1] - soak.size[0]) / max(len(soak.size) - 1, 1)
    print(
        f"instance: {soak.size[0] / KB / KB:.1f} MB after run 1, {soak.size[-1] / KB / KB:.1f} MB after run "
        f"{len(soak.size)} ({grown / KB / KB:.2f} MB per run); peak RSS {soak.rss[0]:.0f} -> {soak.rss[-1]:.0f} MB"
    )


def alternate(soak: Soak, pairs: int) -> dict[str, list[float]]:
    """After the soak, runs on the soaked instance alternated with runs on new fresh instances, so that a change
    of the machine's speed during the soak (not all of which shows in the load average) falls on both sides."""
    fresh = [Soak(soak.work.parent / f"fresh-{index}", soak.rows, soak.concurrency) for index in range(pairs)]
    first = len(soak.wall)
    for instance in fresh:
        soak.run()
        instance.run()
    figures = {"soaked_wall": soak.wall[first:], "soaked_cpu": soak.cpu[first:]}
    figures |= {"fresh_wall": [one.wall[0] for one in fresh], "fresh_cpu": [one.cpu[0] for one in fresh]}
    for name in ("wall", "cpu"):
        soaked, new = statistics.median(figures[f"soaked_{name}"]), statistics.median(figures[f"fresh_{name}"])
        print(
            f"alternated, {pairs} pairs: {name} median soaked {soaked:.2f} s, fresh {new:.2f} s, "
            f"soaked / fresh {soaked / new:.2f} (target <= {RUN_TARGET})"
        )
    return figures


def _trend(times: list[float]) -> str:
    """The least-squares slope over runs 2..N (run 1 compares with nothing): uses every run, not two ends."""
    later = times[1:]
    if len(later) < 2:
        return "no trend from fewer than 3 runs"
    slope = statistics.linear_regression(range(len(later)), later).slope
    over = slope * (len(later) - 1) / statistics.mean(later)
    return f"trend {slope * 1000:+.0f} ms per run ({over:+.1%} over runs 2-{len(times)})"


def report_pages(fresh: dict[str, float], soaked: dict[str, float], again: dict[str, float]) -> None:
    """Soaked against fresh, and against a fresh instance measured just after it (the machine's load drifts)."""
    for page in PAGES:
        print(
            f"{page}: fresh {fresh[page]:.2f} s, soaked {soaked[page]:.2f} s, ratio "
            f"{soaked[page] / fresh[page]:.2f} (target <= {PAGE_TARGET}); a fresh instance after the soak "
            f"{again[page]:.2f} s, ratio {soaked[page] / again[page]:.2f}"
        )


@contextmanager
def _postgres(folder: Path) -> Iterator[Path]:
    """A home on a fresh PostgreSQL server, in ``folder``."""
    folder.mkdir(parents=True)
    with postgres_home(folder) as (home, _):
        yield home


def soak_and_measure(work: Path, runs: int, rows: int, concurrency: int, postgres: bool) -> dict[str, object]:
    """The soak, the pages fresh, soaked and on a fresh instance after it, then (SQLite) runs on the soaked
    instance alternated with runs on fresh ones. ``postgres``: each instance a fresh PostgreSQL server's
    (its "instance" size is then only the home folder's; bench_instance_size.py measures the tables)."""
    with ExitStack() as servers:
        homes = [servers.enter_context(_postgres(work / name)) for name in ("soak", "control")] if postgres else []
        soak = Soak(work / "soak", rows, concurrency, homes[0] if homes else None)
        print(f"soak: {runs} runs x {rows} rows, concurrency {concurrency}, {'PostgreSQL' if postgres else 'SQLite'}")
        soak.run()
        fresh = page_loads(soak, "after run 1")
        for _ in range(runs - 1):
            soak.run()
        soaked = page_loads(soak, f"after run {runs}")
        control = Soak(work / "control", rows, concurrency, homes[1] if homes else None)
        control.run()
        again = page_loads(control, "a fresh instance after the soak")
    report_runs(soak)
    report_pages(fresh, soaked, again)
    pages = {"fresh": fresh, "soaked": soaked, "fresh_after": again}
    figures: dict[str, object] = {
        "wall": soak.wall,
        "inside": soak.inside,
        "cpu": soak.cpu,
        "size": soak.size,
        "rss": soak.rss,
        **pages,
    }
    if not postgres:  # a fresh PostgreSQL instance is a server of its own: not alternated
        figures["alternated"] = alternate(soak, PAIRS)
        left = soak.size[-1]  # after the alternated runs too
        checkpoint(soak.home)
        checkpointed = folder_bytes(soak.home) / KB / KB
        print(f"instance after a WAL checkpoint: {checkpointed:.1f} MB (as left {left / KB / KB:.1f})")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--postgres", action="store_true", help="each instance on a fresh PostgreSQL server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        figures = soak_and_measure(Path(tmp), args.runs, args.rows, args.concurrency, args.postgres)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
