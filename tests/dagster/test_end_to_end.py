"""End to end through the Dagster asset graph on a temporary instance.

A dataset task with suite thresholds, a two-variant experiment with repeats,
a pre_run abort, a skipped task; then the run folder, run.json, the Parquet
tables (pandas and DuckDB) and the instance's per-partition materializations;
then a rescore after a criterion changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import duckdb
import pandas as pd
import pytest

from ..support.helpers import run_cli, run_folders, write

CLASSIFY = """
task_id: sentiment
description: "Label each review"
agent: {type: none}
sandbox: {python: null}
dataset:
  paths: ["../data/reviews.jsonl"]
  stratify_field: label
success_criteria:
  - type: run_command
    description: "stand-in classifier writes its guess"
    command: "printf '%s' ${row.guess} > label.txt"
    weight: 0
  - type: classification_match
    description: "label of ${row.id}"
    path: label.txt
    expected_label: "${row.label}"
    allowed_labels: [positive, negative]
    suite_thresholds: {accuracy: 0.5, recall.positive: 0.9}
"""

ROWS = [
    {"id": "r1", "label": "positive", "guess": "positive"},
    {"id": "r2", "label": "positive", "guess": "negative"},
    {"id": "r3", "label": "negative", "guess": "negative"},
    {"id": "r4", "label": "negative", "guess": "meh"},
]

SMOKE = """
task_id: smoke
description: "pre_run output and a starter file"
agent: {type: none}
sandbox:
  python: null
  template_sources:
    - {type: starter_files, files: [{path: a.txt, content: "alpha"}]}
pre_run:
  - command: "echo from-pre > pre.txt"
post_run:
  - command: "echo post > post.txt"
success_criteria:
  - {type: file_contains, path: pre.txt, includes: [from-pre], description: "pre_run ran"}
  - {type: file_exists, path: HINT.md, description: "variant hint present", weight: 0}
"""

BROKEN = """
task_id: broken_setup
description: "a failing pre_run aborts with ERROR"
agent: {type: none}
sandbox: {python: null}
pre_run:
  - {command: "exit 7"}
  - {command: "touch never.txt"}
success_criteria:
  - {type: file_exists, path: never.txt, description: "never checked"}
"""

PARKED = """
task_id: parked
description: "quarantined"
skip: true
agent: {type: none}
success_criteria:
  - {type: file_exists, path: x, description: x}
"""

EXPERIMENT = """
experiment_id: ab
tasks: ["../tasks/"]
repeats: 2
defaults:
  pre_run: [{command: "echo default > default.txt"}]
variants:
  - variant_id: baseline
  - variant_id: hinted
    template_sources:
      - {type: starter_files, files: [{path: HINT.md, content: "hint"}]}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write(tmp_path / "tasks/sentiment.yaml", CLASSIFY)
    write(tmp_path / "data/reviews.jsonl", "".join(json.dumps(r) + "\n" for r in ROWS))
    write(tmp_path / "tasks/smoke.yaml", SMOKE)
    write(tmp_path / "tasks/broken.yaml", BROKEN)
    write(tmp_path / "tasks/parked.yaml", PARKED)
    write(tmp_path / "experiments/ab.yaml", EXPERIMENT)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _only_run(runs: Path) -> Path:
    (run_dir,) = run_folders(runs)
    return run_dir


def test_experiment_run_through_dagster_and_rescore(project: Path) -> None:
    result = run_cli("run", "-e", "experiments/ab.yaml", "--runs-dir", "runs", "--concurrency", "4")
    assert result.code == 1, result.err  # an ERROR task and an unmet suite threshold
    run_dir = _only_run(project / "runs")
    document = json.loads((run_dir / "run.json").read_text())

    # 6 row-tasks x 2 variants x 2 replicates
    assert len(document["task_results"]) == 24 and document["tasks_run"] == 24
    assert document["skipped_tasks"] == [
        {
            "path": "experiments/../tasks/parked.yaml",
            "reason": "skip: true (--include-skipped runs it)",
            "task_id": "parked",
        }
    ]
    assert document["experiment"] == "ab" and document["passed"] is False
    by_key = {(t["variant_id"], t["task_id"], t["replicate_index"]): t for t in document["task_results"]}
    assert by_key[("hinted", "smoke", 1)]["status"] == "SUCCESS"
    assert by_key[("baseline", "smoke", 0)]["status"] == "SUCCESS"  # informational HINT.md missing
    hint = by_key[("baseline", "smoke", 0)]["criteria"][1]
    assert (hint["gating"], hint["passed"]) == (False, False)
    broken = by_key[("baseline", "broken_setup", 0)]
    assert broken["status"] == "ERROR" and broken["criteria"] == []
    assert by_key[("baseline", "sentiment/r2", 0)]["status"] == "FAILURE"
    assert (document["tasks_error"], document["error_share"]) == (4, 4 / 24)

    # the run folder of one replicate
    folder = run_dir / "hinted" / "smoke" / "01"
    task_json = json.loads((folder / "task.json").read_text())
    assert [r["command"] for r in task_json["pre_run_results"]] == [
        "echo default > default.txt",
        "echo from-pre > pre.txt",
    ]
    assert (folder / "sandbox" / "post.txt").read_text() == "post\n"  # post_run ran, after the criteria
    assert "<!DOCTYPE html>" in (folder / "task.html").read_text()
    broken_json = json.loads((run_dir / "baseline/broken_setup/00/task.json").read_text())
    assert [r["skipped"] for r in broken_json["pre_run_results"]] == [
        False,
        False,
        True,
    ] and "exit code 7" in broken_json["error_message"]
    assert not (run_dir / "baseline/broken_setup/00/sandbox/never.txt").exists()

    # suite metrics per variant: 8 observations (4 rows x 2 replicates)
    suite = {entry["variant_id"]: entry for entry in document["suite"] if entry["criterion_index"] == 1}
    assert set(suite) == {"baseline", "hinted"}
    entry = suite["baseline"]
    assert entry["criterion_index"] == 1 and entry["metrics"]["accuracy"] == 0.5
    assert entry["metrics"]["recall.positive"] == 0.5 and entry["metrics"]["precision.positive"] == 1.0
    assert entry["confusion_matrix"] == {
        "negative": {"(other)": 2, "negative": 2},
        "positive": {"negative": 2, "positive": 2},
    }
    assert [(t["metric"], t["passed"]) for t in entry["thresholds"]] == [("accuracy", True), ("recall.positive", False)]

    # the Parquet tables agree with run.json, through pandas and DuckDB
    tables = project / "runs" / "tables"
    frame = pd.read_parquet(tables / "task_results")
    assert len(frame) == 24 and set(frame["run_id"]) == {document["run_id"]}
    started = pd.Timestamp(document["start_time"])  # to the ms: two runs begun in one second do not tie
    assert set(frame["run_ts"]) == {started}
    assert (frame["final_status"] == "ERROR").sum() == 4
    metrics = duckdb.sql(
        f"select value from read_parquet('{tables}/suite_metrics/**/*.parquet', hive_partitioning=true) "
        "where variant_id = 'hinted' and metric = 'accuracy'"
    ).fetchall()
    assert metrics == [(0.5,)]
    scores = duckdb.sql(
        f"select count(*) from read_parquet('{tables}/criteria_scores/**/*.parquet', hive_partitioning=true) "
        "where gating = false"
    ).fetchall()
    assert scores == [(sum(1 for t in document["task_results"] for c in t["criteria"] if not c["gating"]),)]

    # the Dagster instance recorded one materialization per partition, with its metadata
    instance = dg.DagsterInstance.get()
    materialized = instance.get_materialized_partitions(dg.AssetKey("criteria_scores"))
    assert len(materialized) == 12
    latest = instance.get_latest_materialization_event(dg.AssetKey("criteria_scores"))
    assert latest is not None and latest.run_id == document["dagster_run_id"]  # the asset row, written once per batch
    run = instance.get_run_by_id(document["dagster_run_id"])
    assert run is not None and run.job_name == "evaluate"
    events = instance.fetch_materializations(dg.AssetKey("criteria_scores"), limit=100).records
    metadata = {str(e.partition_key): e.asset_materialization.metadata for e in events}
    smoke = next(m for k, m in metadata.items() if k.startswith("smoke|hinted"))
    assert smoke["status"].value == "SUCCESS, SUCCESS" and smoke["report"].value.endswith("task.html")
    checks = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(dg.AssetKey("suite_metrics"), "suite_thresholds")]
    )
    assert next(iter(checks.values())).evaluation.passed is False

    # rescore: loosen the threshold and fix the expected label of r4; nothing re-runs but the criteria
    text = (project / "tasks/sentiment.yaml").read_text()
    (project / "tasks/sentiment.yaml").write_text(text.replace("recall.positive: 0.9", "recall.positive: 0.5"))
    (project / "tasks/broken.yaml").write_text(BROKEN.replace("exit 7", "exit 0"))  # pre_run is NOT re-run
    rescored = run_cli("rescore", str(run_dir))
    document = json.loads((run_dir / "run.json").read_text())
    by_key = {(t["variant_id"], t["task_id"], t["replicate_index"]): t for t in document["task_results"]}
    assert by_key[("baseline", "broken_setup", 0)]["status"] == "ERROR"
    assert all(t["passed"] for e in document["suite"] for t in e["thresholds"])
    assert rescored.code == 1  # the ERROR tasks still fail the run
    assert len(pd.read_parquet(tables / "task_results")) == 24  # replaced, not appended


def test_run_of_the_shipped_tasks_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    root = Path(__file__).parent.parent.parent
    result = run_cli("run", root / "tasks", "--runs-dir", tmp_path / "runs")
    assert result.code == 0, result.err + result.out
    document = json.loads((_only_run(tmp_path / "runs") / "run.json").read_text())
    assert document["passed"] and len(document["task_results"]) == 13
    classified = next(entry for entry in document["suite"] if "accuracy" in entry["metrics"])
    assert classified["metrics"]["accuracy"] == 1.0 and "default" in result.out
    commands = pd.read_parquet(tmp_path / "runs" / "tables" / "commands")
    hello = commands[commands["task_id"] == "replay_hello"]
    assert list(hello["tool"]) == ["Write", "Bash", "Edit"] and len(commands) == 3 + 5 * 2 + 4
    dialog = pd.read_parquet(tmp_path / "runs" / "tables" / "dialog_turns")
    assert list(dialog["task_id"].unique()) == ["replay_dialog"] and list(dialog["role"]) == ["user", "agent"] * 2


def test_invalid_input_exits_2_and_runs_nothing(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "task_id: x\ndescription: d\n")
    result = run_cli("run", bad, "--runs-dir", tmp_path / "runs")
    assert result.code == 2 and "success_criteria" in result.err and not (tmp_path / "runs").exists()
