"""Comparisons of real runs: two `coder-eval run`s of an experiment through the Dagster graph.

The first run is healthy (the hinted variant passes every row, the baseline
three of eight); before the second, the dataset marks every row broken (a
confined criterion sees no host file), so every row fails: the nightly check flags the hinted variant's eight
regressions. Then the pages in headless Chromium, `history`, and every SQL
block of docs/analysts.md against the tables the runs wrote.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from coder_eval_dagster.core.compare.history import QUESTIONS, history
from coder_eval_dagster.core.compare.index import render_index
from coder_eval_dagster.core.layout import INDEX_ROW

from ..support.browser import ARTIFACTS, chromium
from ..support.helpers import run_cli, run_folders, write

pytestmark = pytest.mark.slow
ROOT = Path(__file__).parent.parent.parent

TASK = """
task_id: shop
description: "rows pass with the hint, or when n > 5; nothing passes once the rows say broken"
tags: [shop]
agent: {{type: replay, trajectory: ../data/trajectory.yaml}}
sandbox: {{python: null}}
dataset: {{paths: ["../data/rows.jsonl"]}}
success_criteria:
  - {{type: run_command, command: "test -e HINT.md -o ${{row.n}} -gt 5", description: "hint or a large n"}}
  - {{type: run_command, command: "test ${{row.broken}} = 0", description: "not broken"}}
  - {{type: run_command, command: "printf yes > label.txt", description: "a stand-in classifier", weight: 0}}
  - type: classification_match
    description: "always right, yet no 'no' is ever found: recall.no misses its suite threshold"
    path: label.txt
    expected_label: "yes"
    allowed_labels: ["yes", "no"]
    suite_thresholds: {{recall.no: 0.5}}
"""

EXPERIMENT = """
experiment_id: hint-ab
tasks: ["../tasks/"]
variants:
  - variant_id: baseline
  - variant_id: hinted
    template_sources:
      - {type: starter_files, files: [{path: HINT.md, content: "hint"}]}
"""


def rows(broken: int) -> str:
    return "".join(json.dumps({"id": f"r{n}", "n": n, "broken": broken}) + "\n" for n in range(1, 9))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The project folder and the two run folders (healthy, then broken)."""
    project = tmp_path_factory.mktemp("project")
    write(project / "tasks/shop.yaml", TASK.format())
    write(project / "data/rows.jsonl", rows(broken=0))
    write(project / "experiments/ab.yaml", EXPERIMENT)
    write(project / "data/trajectory.yaml", "turns: [{calls: [{tool: Bash, command: 'true'}]}]\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_HOME", str(project / "dagster_home"))
        patch.chdir(project)
        assert run_cli("run", "-e", "experiments/ab.yaml", "--runs-dir", "runs").code == 1  # baseline rows fail
        write(project / "data/rows.jsonl", rows(broken=1))
        assert run_cli("run", "-e", "experiments/ab.yaml", "--runs-dir", "runs").code == 1
        first, second = run_folders(project / "runs")
    return project, first, second


def _check(project: Path) -> list[dg.AssetCheckEvaluation]:
    instance = dg.DagsterInstance.from_config(str(project / "dagster_home"))
    key = dg.AssetCheckKey(dg.AssetKey("variant_comparison"), "no_significant_regression")
    records = instance.event_log_storage.get_asset_check_execution_history(key, limit=10)
    return [record.event.dagster_event.event_specific_data for record in reversed(records)]  # type: ignore[union-attr]


def test_a_run_writes_its_comparison_and_the_runs_index(runs: tuple[Path, Path, Path]) -> None:
    project, first, _ = runs
    document = json.loads((first / "run.json").read_text())
    assert document["variants"] == ["baseline", "hinted"]
    assert document["comparison"] == {"page": "comparison.html", "figure": "comparison.success_rate.png"}
    assert "![success rate per variant](comparison.success_rate.png)" in (first / "run.md").read_text()
    assert (first / "comparison.success_rate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (first / "comparison.html").read_text()
    assert "hinted vs baseline" in page and "+62.5 pp" in page  # 8/8 against 3/8
    index = (project / "runs" / "index.html").read_text()
    # newest first (a run started within the same second is named "<first>-2": match the whole name)
    assert index.index(f'"{first.name}/') > index.index(f'"{runs[2].name}/')
    assert (
        f'href="{first.name}/comparison.html"' in index and f'href="{first.name}/hinted/shop/r1/00/task.html"' in index
    )
    assert "baseline: 3/8 (38%); hinted: 8/8 (100%)" in index
    for row in (project / "runs").glob(f"*/{INDEX_ROW}"):
        row.unlink()  # each run's row rendered again from its run.json read back: the run's own was not read
    assert render_index(project / "runs") == index


def test_the_assets_metadata_and_the_regression_check(runs: tuple[Path, Path, Path]) -> None:
    project, first, second = runs
    instance = dg.DagsterInstance.from_config(str(project / "dagster_home"))
    suite = instance.fetch_materializations(dg.AssetKey("suite_metrics"), limit=2).records
    assert [r.asset_materialization.metadata["pass_rate"].value for r in suite] == [0.0, 11 / 16]
    comparison = instance.fetch_materializations(dg.AssetKey("variant_comparison"), limit=2).records
    latest, earlier = (r.asset_materialization.metadata for r in comparison)
    assert earlier["success_rate.hinted"].value == 1.0 and earlier["success_rate.baseline"].value == 3 / 8
    assert "| baseline | hinted | 8 | 37.5% | 100.0% | +62.5 pp |" in earlier["comparison"].value
    assert latest["success_rate.hinted"].value == 0.0
    healthy, broken = _check(project)
    assert healthy.passed and healthy.metadata["previous_run"].value == "none of the same task set"
    assert not broken.passed and broken.metadata["previous_run"].value == first.name
    assert broken.metadata["hinted.regressed_rows"].value.split("\n") == [f"shop/r{n}" for n in range(1, 9)]
    assert broken.metadata["hinted.mcnemar_p"].value == pytest.approx(2 / 256)
    assert broken.metadata["baseline.regressed_rows"].value.split("\n") == ["shop/r6", "shop/r7", "shop/r8"]
    assert json.loads(run_cli("compare", first, second, "--format", "json").out)["pairs"][1]["difference"] == -1


def test_pages_render_in_headless_chromium(runs: tuple[Path, Path, Path]) -> None:
    project, first, second = runs
    history_page = project / "runs" / "history.html"
    assert run_cli("history", project / "runs", "--format", "html").code == 0
    two_runs = run_cli("compare", first, second, "--format", "html")
    pages = {
        "comparison": first / "comparison.html",
        "two-runs": Path(two_runs.out.strip()),
        "history": history_page,
        "index": project / "runs" / "index.html",
    }
    ARTIFACTS.mkdir(exist_ok=True)
    for name, page in pages.items():
        dom = chromium(page.as_uri(), "--dump-dom").stdout
        assert "<table>" in dom and "</html>" in dom, name
        if name != "index":
            assert "<svg" in dom, name
        shot = ARTIFACTS / f"compare-{name}.png"
        chromium(page.as_uri(), f"--screenshot={shot}")
        assert shot.stat().st_size > 10_000, name
    assert (project / "runs" / "history.pass_rate_over_time.png").exists()


def test_history_finds_the_flaky_rows(runs: tuple[Path, Path, Path]) -> None:
    project, _, _ = runs
    answers = history(project / "runs").answers
    flaky = answers["flaky_rows"]
    assert len(flaky) == 11 and set(flaky["flips_between_runs"]) == {1}  # 8 hinted rows and 3 baseline rows
    shown = run_cli("history", project / "runs", "--task", "shop/r[12]", "--format", "json")
    rates = json.loads(shown.out)["pass_rate_per_day"]
    assert [(r["variant_id"], r["evaluations"], r["pass_rate"]) for r in rates] == [
        ("baseline", 4, 0.0),
        ("hinted", 4, 0.5),
    ]
    criteria = answers["failing_criteria"]
    assert criteria.iloc[0]["failures"] == 16 and criteria.iloc[0]["criterion_index"] == 1  # "not broken", run 2


def test_every_sql_block_of_the_analysts_guide_runs(
    runs: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, _, _ = runs
    guide = (ROOT / "docs" / "analysts.md").read_text()
    blocks = re.findall(r"```sql\n(.*?)```", guide, flags=re.DOTALL)
    for question, (_, sql) in QUESTIONS.items():
        assert sql in blocks, f"docs/analysts.md does not show the SQL of {question} as history runs it"
    expected = history(project / "runs").answers
    monkeypatch.chdir(project)
    with duckdb.connect() as connection:
        answers = [connection.execute(block).df() for block in blocks]  # views persist across blocks
    assert all(len(answer) for answer, block in zip(answers, blocks, strict=True) if "CREATE" not in block)
    for question, (_, sql) in QUESTIONS.items():
        assert answers[blocks.index(sql)].equals(expected[question]), question
