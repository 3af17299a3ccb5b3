"""`coder-eval compare` and `history` as a user runs them over agentless experiments: nothing is left out unsaid.

Each variant's starter file ``variant.txt`` names the rows that pass (or says
ERROR: its pre_run fails, so every evaluation of it is an ERROR); the task's
three dataset rows r1, r2, r3 share one base task.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from ..support.helpers import write
from .conftest import RunFolder, SystemCli, only_run, task_file

pytestmark = pytest.mark.slow

DECIDES = 'if grep -qx ERROR variant.txt; then exit 1; fi; if grep -qw "${row.id}" variant.txt; then echo a > a.txt; fi'


@dataclass
class Project:
    cli: SystemCli
    folder: Path

    def run(self, name: str, variants: dict[str, str]) -> RunFolder:
        """The experiment ``name`` of ``variants`` (variant -> what its variant.txt says), in runs folder ``name``."""
        experiment = {
            "experiment_id": name,
            "tasks": ["../tasks/"],
            "variants": [
                {"variant_id": variant, "template_sources": [{"type": "starter_files", "files": [starter(text)]}]}
                for variant, text in variants.items()
            ],
        }
        path = write(self.folder / "experiments" / f"{name}.yaml", yaml.safe_dump(experiment))
        runs = self.folder / name
        outcome = self.cli("run", "-e", path, "--runs-dir", runs, env={})
        assert outcome.code in (0, 1), outcome.output
        return only_run(runs)


def starter(text: str) -> dict[str, str]:
    return {"path": "variant.txt", "content": text}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    folder = tmp_path_factory.mktemp("sweep")
    rows = {"rows": [{"id": "r1"}, {"id": "r2"}, {"id": "r3"}]}
    task_file(folder / "tasks", "t", agent={"type": "none"}, dataset=rows, pre_run=[{"command": DECIDES}])
    return Project(SystemCli(folder), folder)


@pytest.fixture(scope="module")
def runs(project: Project) -> dict[str, RunFolder]:
    """first: B then A; second: A then Z; broken: A and E (all ERROR); passing: A alone, every row passing."""
    return {
        "first": project.run("first", {"B": "r1", "A": "r1 r2 r3"}),
        "second": project.run("second", {"A": "r1 r2 r3", "Z": "r2"}),
        "broken": project.run("broken", {"A": "r1 r2 r3", "E": "ERROR"}),
        "passing": project.run("passing", {"A": "r1 r2 r3"}),
    }


def test_two_runs_name_the_variants_only_one_of_them_ran(project: Project, runs: dict[str, RunFolder]) -> None:
    """B (first run only) and Z (second only) were dropped without a word: every format names them, and why."""
    first, second = runs["first"].path, runs["second"].path
    as_json = project.cli("compare", first, second, "--format", "json", env={})
    assert as_json.code == 0, as_json.output
    document = json.loads(as_json.out)
    assert document["variants_left_out"] == {"first_run_only": ["B"], "second_run_only": ["Z"]}
    assert [(p["baseline"], p["other"]) for p in document["pairs"]] == [(f"A@{first.name}", f"A@{second.name}")]
    said = (
        f"each in one run only (a pair needs the variant in both): B (in {first.name} only); Z (in {second.name} only)"
    )
    page = project.folder / "pages" / "two.html"
    for options in (["--format", "table"], ["--format", "md"], ["--baseline", "A"]):
        shown = project.cli("compare", first, second, *options, env={})
        assert shown.code == 0 and said in shown.out, shown.output
    assert project.cli("compare", first, second, "--format", "html", "-o", page, env={}).code == 0
    assert said in page.read_text(encoding="utf-8")
    one_run = json.loads(project.cli("compare", first, "--format", "json", env={}).out)
    assert one_run["variants_left_out"] is None


def test_a_variant_all_error_keeps_its_place_in_the_success_rate_figure(runs: dict[str, RunFolder]) -> None:
    """E's evaluations all ended in ERROR: its bar, tick and name were gone from the figure run.md shows."""
    run = runs["broken"].path
    page = (run / "comparison.html").read_text(encoding="utf-8")
    figure = re.search(r'<figure id="success_rate">.*?</figure>', page, re.DOTALL)
    assert figure is not None
    texts = re.findall(r"<!-- (.*?) -->", figure.group(0))  # matplotlib names each text it draws as paths
    assert {"A", "E", "all ERROR"} <= set(texts), texts
    assert "](comparison.success_rate.png)" in (run / "run.md").read_text(encoding="utf-8")
    assert (run / "comparison.success_rate.png").is_file()


def test_history_says_none_under_every_heading(project: Project, runs: dict[str, RunFolder]) -> None:
    """A run with nothing failing and nothing flaky printed the pass-rate table alone; a --task matching nothing
    printed the title alone."""
    folder = runs["passing"].path.parent
    headings = ["The gating criteria that fail most", "Flaky rows: replicates disagree"]
    shown = project.cli("history", folder, env={})
    assert shown.code == 0, shown.output
    for heading in headings:
        assert re.search(rf"^{re.escape(heading)}.*\nnone$", shown.out, re.MULTILINE), shown.out
    missed = "No row of the runs matches --task 'nomatch*'."
    headings.insert(0, "Pass rate per variant per day")
    for form in ("table", "md", "html"):
        page = project.folder / "pages" / f"history.{form}"
        shown = project.cli("history", folder, "--task", "nomatch*", "--format", form, "-o", page, env={})
        assert shown.code == 0, shown.output
        text = page.read_text(encoding="utf-8").replace("&#x27;", "'")
        assert missed in text and all(heading in text for heading in headings), text
        assert text.count("none") >= 3, text
    empty = json.loads(project.cli("history", folder, "--task", "nomatch*", "--format", "json", env={}).out)
    assert empty == {"pass_rate_per_day": [], "failing_criteria": [], "flaky_rows": []}


def test_one_base_task_gives_no_clustered_interval_and_the_verdict_one_reason(
    project: Project, runs: dict[str, RunFolder]
) -> None:
    """One base task read "clustered (t, df 0)", and the verdict listed all three reasons the bootstrap is read."""
    shown = project.cli("compare", runs["first"].path, env={})
    assert shown.code == 0, shown.output
    assert "df 0" not in shown.out and "no clustered interval can be made from one base task" in shown.out
    (verdict,) = [line for line in shown.out.splitlines() if line.startswith("Verdict:")]
    assert "from the paired bootstrap interval (one base task only) [" in verdict, verdict
    assert "no base task has more than one row" not in verdict and "no width" not in verdict
