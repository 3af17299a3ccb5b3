"""Issue 23 through the installed CLI: a sequential A/B that stops when decisive, an A/A that runs to the end, and
replicates that disagree reported as flaky rows with pass@k and pass^k, gated by max_flaky_share."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pandas as pd
import pytest
import yaml

from ..support.helpers import criterion, write, write_task
from .conftest import SystemCli

pytestmark = pytest.mark.slow


def threshold_task(folder: Path, rows: int) -> Path:
    """A row passes when its number is below the variant's threshold (a starter file): fixed per row and variant."""
    numbers = [(n * 37) % 100 for n in range(rows)]  # spread over 0..99
    task = {
        "task_id": "ab",
        "description": "a row passes below the variant's threshold",
        "agent": {"type": "none"},
        "initial_prompt": None,
        "sandbox": {"python": None},
        "dataset": {"rows": [{"id": f"r{n:03d}", "n": value} for n, value in enumerate(numbers)]},
        "success_criteria": [criterion("run_command", command='test "${row.n}" -lt "$(cat threshold)"')],
    }
    return write_task(folder, task, "ab.yaml")


def experiment(path: Path, thresholds: dict[str, int], **fields: object) -> Path:
    variants = [
        {
            "variant_id": variant,
            "template_sources": [{"type": "starter_files", "files": [{"path": "threshold", "content": str(value)}]}],
        }
        for variant, value in thresholds.items()
    ]
    return write(path, yaml.safe_dump({"experiment_id": "seq", "variants": variants, **fields}, sort_keys=False))


def test_a_clearly_better_variant_stops_the_run_early(tmp_path: Path, system_cli: SystemCli) -> None:
    task = threshold_task(tmp_path / "tasks", 200)
    sequential = {"batch_rows": 20, "seed": 7, "max_rows": 160}
    exp = experiment(tmp_path / "exp.yaml", {"a": 30, "b": 80}, sequential=sequential)
    outcome, run = system_cli.run(task, "-e", str(exp), env={}, timeout=600)

    assert outcome.code == 1, outcome.output  # variant a fails most rows: the run's verdict is FAILED
    block = run.summary["sequential"]
    assert block["decision"] == "other_better", block
    assert block["stopped_at_batch"] is not None and block["rows_run"] < 200 and block["rows_total"] == 200
    assert block["rows_run"] == 20 * block["stopped_at_batch"]  # no new row after the deciding batch
    not_run = run.summary["not_run"]  # both variants of each planned row never started, recorded once for the run
    assert len(not_run) == 2 * (160 - block["rows_run"]) and {e["reason"] for e in not_run} == {"sequential"}
    assert block["rows_beyond_max_rows"] == 40  # never planned, and said so
    assert "40 rows beyond `max_rows` were never planned." in (run.path / "run.md").read_text()
    assert block["interval"]["low"] > 0
    assert "sequential A/B: other_better" in outcome.out
    assert len(run.summary["task_results"]) == 2 * block["rows_run"]
    # each evaluation knows its batch, in task.json and the task_results table
    (table,) = (system_cli.runs / "tables/task_results").glob(f"*/{run.path.name}.parquet")
    batches = pd.read_parquet(table)["batch"]
    assert batches.notna().all() and batches.max() == block["stopped_at_batch"]
    compared = system_cli("compare", run.path, "--format", "json", env={})
    assert compared.code == 0, compared.output
    (pair,) = json.loads(compared.out)["pairs"]
    assert pair["sequential"]["result"]["decision"] == "other_better" and len(pair["sequential"]["steps"]) >= 1
    # a rescore on criteria every row passes decides nothing, yet the run still stopped where it stopped
    write(task, task.read_text().replace('test "${row.n}" -lt "$(cat threshold)"', "exit 0"))
    rescored = system_cli("rescore", run.path, env={})
    assert rescored.code == 0, rescored.output
    again = json.loads((run.path / "run.json").read_text())["sequential"]
    assert again["decision"] == "undecided" and again["stopped_at_batch"] == block["stopped_at_batch"], again
    assert again["rows_run"] == block["rows_run"]


def test_an_a_a_experiment_runs_to_the_end_without_a_decision(tmp_path: Path, system_cli: SystemCli) -> None:
    task = threshold_task(tmp_path / "tasks", 60)
    exp = experiment(tmp_path / "exp.yaml", {"a": 50, "b": 50}, sequential={"batch_rows": 20})
    outcome, run = system_cli.run(task, "-e", str(exp), env={}, timeout=600)

    block = run.summary["sequential"]
    assert (block["decision"], block["rows_run"], block["stopped_at_batch"], run.summary["not_run"]) == (
        "undecided",
        60,
        None,
        [],
    ), outcome.output


def test_replicates_that_disagree_are_flaky_rows_with_pass_at_k_and_the_gate(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    task = {
        "task_id": "coin",
        "description": "passes on about half of its replicates",
        "agent": {"type": "none"},
        "initial_prompt": None,
        "sandbox": {"python": None},
        "dataset": {"rows": [{"id": f"r{n}"} for n in range(8)]},
        "success_criteria": [criterion("run_command", command="test $(( $(od -An -N1 -tu1 /dev/urandom) % 2 )) = 0")],
    }
    path = write_task(tmp_path / "tasks", task, "coin.yaml")
    exp = write(
        tmp_path / "exp.yaml", "experiment_id: coin\nrepeats: 4\nmax_flaky_share: 0\nvariants:\n  - variant_id: v\n"
    )
    outcome, run = system_cli.run(path, "-e", str(exp), env={}, timeout=600)

    summary = run.summary
    passes: dict[str, int] = {}
    for row in summary["task_results"]:
        passes[row["task_id"]] = passes.get(row["task_id"], 0) + (row["status"] == "SUCCESS")
    flaky = sorted(task_id for task_id, count in passes.items() if 0 < count < 4)
    assert sorted(r["task_id"] for r in summary["flaky_rows"]) == flaky
    for k in (1, 2, 3, 4):  # the unbiased estimators, by hand: 1 - C(n-c, k)/C(n, k) and C(c, k)/C(n, k)
        at = sum(1 - comb(4 - c, k) / comb(4, k) for c in passes.values()) / 8
        hat = sum(comb(c, k) / comb(4, k) for c in passes.values()) / 8
        assert summary["pass_at_k"]["v"][str(k)] == pytest.approx(at)
        assert summary["pass_hat_k"]["v"][str(k)] == pytest.approx(hat)
    assert summary["flaky"]["max_share"] == 0 and summary["flaky"]["share"] == len(flaky) / 8
    assert flaky  # 8 rows of 4 fair coins all agree with probability 8^-8
    assert outcome.code == 1 and not summary["passed"] and "flaky rows" in outcome.out, outcome.output
