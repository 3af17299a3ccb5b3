"""Benchmark: the Dagster UI at suite size (issue 25): 10,000 row-tasks x 2 variants registered.

`coder-eval register -e EXPERIMENT` (the installed console script) on a fresh
instance registers one agentless dataset task of R rows under an experiment of
two variants; a real dagster-webserver serves it on the project's code
location, and the headless Chromium of the UI tests times, by the page's own
clock, the median of ``--loads`` after one warm-up:

1. the partitions page of ``resolved_tasks`` (``?view=partitions``) until its
   materialized count and its first partition key show;
2. the backfill dialog: Materialize clicked on the ``sandbox_runs`` page (once
   the button is enabled) until the partitions dialog shows its partition
   selection (both dimensions) and its Launch backfill button.

The issue's own figures for the UI at this size: the partitions page in
1.1-1.5 s, the dialog ready in 2.4 s. "Keep it so."

    python bench/bench_ui_scale.py [--rows 10000] [--loads 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_soak import TEXT, open_page
from tests.support.browser import MATERIALIZE_BUTTON, NO_COMMUNITY_POPUP, Chromium
from tests.support.dagster_services import DagsterServices, prepare_instance

CLI = str(Path(sys.executable).parent / "coder-eval")  # the installed console script, not one on PATH
TASK_ID = "ui"
PARTITIONS_PAGE = (
    "/assets/resolved_tasks?view=partitions",
    f"(t => /Materialized \\([1-9][\\d,]*\\)/.test(t) && t.includes('{TASK_ID}/r00000'))({TEXT})",
)
# The dialog is found by its words (the production build has no data-testid). Ready: its partition selection
# drawn (both dimensions) and its Launch backfill button there (disabled until the user picks partitions:
# dynamic dimensions start with none selected).
DIALOG_READY = """(() => {
  const dialog = [...document.querySelectorAll('[role="dialog"]')].find(
    d => d.innerText.includes('Launch runs to materialize sandbox_runs'));
  if (!dialog || (dialog.innerText.match(/Add a partition/g) || []).length < 2) return null;
  const launch = [...dialog.querySelectorAll('button')].find(b => b.innerText.trim() === 'Launch backfill');
  return launch ? performance.now() : null;
})()"""


def write_project(folder: Path, rows: int) -> Path:
    """An agentless dataset task of ``rows`` rows and an experiment of two variants over it; the experiment."""
    folder.mkdir(parents=True)
    (folder / "rows.jsonl").write_text("".join(json.dumps({"id": f"r{i:05d}"}) + "\n" for i in range(rows)))
    task = {
        "task_id": TASK_ID,
        "description": "a suite-size dataset task",
        "agent": {"type": "none"},
        "sandbox": {"python": None},
        "dataset": {"paths": ["rows.jsonl"]},
        "success_criteria": [{"type": "run_command", "command": "true", "description": "nothing"}],
    }
    (folder / "task.yaml").write_text(json.dumps(task))
    experiment = {
        "experiment_id": "ui-scale",
        "tasks": ["task.yaml"],
        "variants": [{"variant_id": "baseline"}, {"variant_id": "other", "run_limits": {"task_timeout": 60}}],
    }
    (folder / "experiment.yaml").write_text(json.dumps(experiment))
    return folder / "experiment.yaml"


def register(experiment: Path, home: Path) -> float:
    """`coder-eval register -e EXPERIMENT` on the instance at ``home``; its seconds."""
    start = time.perf_counter()
    done = subprocess.run(
        [CLI, "register", "-e", str(experiment)],
        env={**os.environ, "DAGSTER_HOME": str(home)},
        cwd=experiment.parent,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        sys.exit(f"coder-eval register failed ({done.returncode}):\n{done.stderr[-3000:]}")
    print(done.stdout.strip().splitlines()[-1])
    return time.perf_counter() - start


def dialog_seconds(browser: Chromium, url: str) -> float:
    """Seconds from the click on Materialize (the page loaded, the button enabled) until the dialog can launch."""
    open_page(browser, url, f"{MATERIALIZE_BUTTON} !== null")
    where = browser.wait_for(MATERIALIZE_BUTTON, timeout=120)
    clicked = float(browser.evaluate("performance.now()"))
    browser.click(where["x"], where["y"])
    return (float(browser.wait_for(DIALOG_READY, timeout=120, every=0.02)) - clicked) / 1000


def median_of(loads: int, measure: Callable[[], float]) -> tuple[float, list[float]]:
    """One warm-up, then the median of ``loads`` measures."""
    measure()
    times = [measure() for _ in range(loads)]
    return statistics.median(times), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--loads", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        home, workspace = prepare_instance(work)
        experiment = write_project(work / "project", args.rows)
        print(f"register: {register(experiment, home):.1f} s ({args.rows} rows x 2 variants)")
        env = {"CODER_EVAL_TASK_PATHS": str(experiment.parent / "task.yaml"), "CODER_EVAL_RUNS_DIR": str(work / "runs")}
        with DagsterServices(home, workspace, env, work / "logs", daemon=False) as services, Chromium() as browser:
            base = f"http://127.0.0.1:{services.port}"
            browser.call("Page.enable")
            browser.call("Page.addScriptToEvaluateOnNewDocument", source=NO_COMMUNITY_POPUP)
            page, pages = median_of(
                args.loads, lambda: open_page(browser, base + PARTITIONS_PAGE[0], PARTITIONS_PAGE[1])
            )
            dialog, dialogs = median_of(args.loads, lambda: dialog_seconds(browser, f"{base}/assets/sandbox_runs"))
    listed = ", ".join(f"{t:.2f}" for t in pages)
    print(f"partitions page (resolved_tasks, {2 * args.rows} partitions): median {page:.2f} s ({listed})")
    listed = ", ".join(f"{t:.2f}" for t in dialogs)
    print(f"backfill dialog (sandbox_runs, click to ready): median {dialog:.2f} s ({listed})")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
