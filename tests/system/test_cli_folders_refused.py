"""The commands that take a folder, given the wrong one: an empty value, a runs folder, a folder inside a run, a
damaged run.json, a runs folder that is not there, a run's evaluation folder to re-grade. Each is refused in one
line with exit 2 (never taken as the current folder, never two runs read as one), or graded as coder_eval grades it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from coder_eval_dagster.core.trees import remove_tree

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow

UPSTREAM_RUNS = Path(__file__).parents[1] / "data" / "upstream_run" / "results"
NO_AGENT = {"type": "none"}


def refused(outcome_code: int, err: str, *words: str) -> None:
    assert outcome_code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err


def two_runs(cli: SystemCli) -> tuple[Path, Path]:
    """Two runs of one agentless task in ``cli.runs`` (its pre_run leaves a.txt in the preserved sandbox)."""
    task = task_file(cli.folder / "tasks", "t", agent=NO_AGENT)
    for _ in range(2):
        outcome = cli("run", task, "--runs-dir", cli.runs, env={})
        assert outcome.code == 0, outcome.output
    first, second = sorted(p for p in cli.runs.iterdir() if (p / "run_plan.json").is_file() and not p.is_symlink())
    return first, second


def test_report_and_compare_refuse_a_runs_folder_and_a_folder_inside_a_run(system_cli: SystemCli) -> None:
    first, second = two_runs(system_cli)
    runs = system_cli.runs
    index = (runs / "index.html").read_text()

    rebuilt = system_cli("report", runs, "--rebuild", env={})
    refused(rebuilt.code, rebuilt.err, "run folder")
    assert not (runs / "run.json").exists() and not (runs / "run.md").exists()
    html = system_cli("report", runs, "-f", "html", env={})
    refused(html.code, html.err, "run folder")
    assert (runs / "index.html").read_text() == index  # the runs index, not a run viewer
    compared = system_cli("compare", runs, env={})
    refused(compared.code, compared.err, "run folder")
    above = system_cli("report", system_cli.folder, "--rebuild", env={})  # a folder above the runs folder
    refused(above.code, above.err, "run folder")
    assert not (system_cli.folder / "run.json").exists()

    variant = second / "default"
    inside = system_cli("report", variant, "--rebuild", env={})
    refused(inside.code, inside.err, f"inside the run folder {second}")
    assert not (variant / "run.json").exists() and not (variant / "run.md").exists()
    compared_inside = system_cli("compare", variant, env={})
    refused(compared_inside.code, compared_inside.err, f"inside the run folder {second}")

    # The run folders themselves, and the latest link, still read.
    for run in (first, runs / "latest"):
        assert system_cli("report", run, "--rebuild", env={}).code == 0
        assert system_cli("compare", run, "--format", "json", env={}).code == 0


def test_coder_evals_run_folders_still_read_and_its_results_folder_is_refused(system_cli: SystemCli) -> None:
    results = system_cli.folder / "results"
    shutil.copytree(UPSTREAM_RUNS, results)
    for run in sorted(results.iterdir()):
        rebuilt = system_cli("report", run, "--rebuild", env={})
        assert rebuilt.code == 0, rebuilt.output
        assert system_cli("report", run, "-f", "html", env={}).code == 0
        compared = system_cli("compare", run, "--format", "json", env={})
        assert compared.code == 0, compared.output
    both = system_cli("report", results, "--rebuild", env={})
    refused(both.code, both.err, "holds run folders")
    assert not (results / "run.json").exists()
    variant = system_cli("report", next(results.iterdir()) / "default", "--rebuild", env={})
    refused(variant.code, variant.err, "inside the run folder")


def test_compare_of_a_run_whose_run_json_is_not_a_mapping(system_cli: SystemCli) -> None:
    shutil.copytree(UPSTREAM_RUNS, system_cli.folder / "results")
    run = next((system_cli.folder / "results").iterdir())
    (run / "run.json").write_text("[1, 2]")
    reported = system_cli("report", run, env={})
    compared = system_cli("compare", run, env={})
    refused(compared.code, compared.err, "expected a mapping", "got a list [1, 2]", f"{run}/run.json")
    assert compared.err == reported.err


def test_evaluate_over_a_runs_evaluation_folder_grades_its_preserved_sandbox(system_cli: SystemCli) -> None:
    """coder_eval's ``coder-eval evaluate tasks/x.yaml ./r/default/x/00`` re-grades the replicate's sandbox."""
    folder = system_cli.folder
    _, run = two_runs(system_cli)
    wants_a = task_file(folder / "grading", "g", agent=NO_AGENT, pre_run=[])  # no pre_run: a.txt must be there
    ours = system_cli("evaluate", wants_a, run / "default" / "t" / "00", "--run-dir", folder / "graded", env={})
    assert ours.code == 0, ours.output
    assert "grading its preserved sandbox" in ours.err and len(ours.err.strip().splitlines()) == 1

    shutil.copytree(UPSTREAM_RUNS, folder / "results")
    made = folder / "results" / "2026-12-05_19-53-04" / "default" / "made" / "00"
    wants_out = task_file(
        folder / "grading",
        "o",
        agent=NO_AGENT,
        pre_run=[],
        success_criteria=[{"type": "file_exists", "path": "out.txt", "description": "out.txt exists"}],
    )
    theirs = system_cli("evaluate", wants_out, made, "--run-dir", folder / "graded-upstream", env={})
    assert theirs.code == 0, theirs.output
    assert str(made / "artifacts" / "made") in theirs.err
    assert json.loads((folder / "graded-upstream" / "task.json").read_text())["final_status"] == "SUCCESS"


def test_a_runs_folder_or_result_folder_in_an_earlier_run_is_refused_before_anything_runs(
    system_cli: SystemCli,
) -> None:
    """``--runs-dir runs/latest`` (or a sandbox in it), ``evaluate --run-dir`` onto a run's evaluation folder: the
    earlier run's viewer, results and sandbox would be written over or merged into. A tables folder whose table is
    a file is refused before the run too, not after its work."""
    first, second = two_runs(system_cli)
    runs, folder = system_cli.runs, system_cli.folder
    task = folder / "tasks" / "t.yaml"
    evaluation = second / "default" / "t" / "00"
    before = {p: p.read_bytes() for p in second.rglob("*") if p.is_file()}
    for runs_dir in (runs / "latest", evaluation / "sandbox"):
        outcome = system_cli("run", task, "--runs-dir", runs_dir, env={})
        refused(outcome.code, outcome.err, f"--runs-dir {runs_dir}", f"the run folder {second}")
    for run_dir in (evaluation, second):
        graded = system_cli("evaluate", task, evaluation / "sandbox", "--run-dir", run_dir, env={})
        refused(graded.code, graded.err, f"--run-dir {run_dir}", f"the run folder {second}")
    graded = system_cli("evaluate", task, evaluation / "sandbox", "--runs-dir", runs / "latest", env={})
    refused(graded.code, graded.err, "--runs-dir")
    assert {p: p.read_bytes() for p in second.rglob("*") if p.is_file()} == before
    # coder_eval writes an earlier `evaluate --run-dir` over: so does this one.
    for _ in range(2):
        again = system_cli("evaluate", task, evaluation / "sandbox", "--run-dir", folder / "graded", env={})
        assert again.code == 0, again.output

    (runs / "tables" / "commands").rename(folder / "commands-table")
    (runs / "tables" / "commands").write_text("")
    outcome = system_cli("run", task, "--runs-dir", runs, env={})
    refused(outcome.code, outcome.err, "tables/commands", "Not a directory")
    made = [p for p in runs.iterdir() if (p / "run_plan.json").is_file() and not p.is_symlink()]
    assert sorted(made) == [first, second]  # nothing ran


def test_a_task_file_in_a_link_loop_is_a_line_not_an_internal_error(system_cli: SystemCli) -> None:
    tasks = system_cli.folder / "tasks"
    task_file(tasks, "t", agent=NO_AGENT)
    (tasks / "loop1.yaml").symlink_to("loop2.yaml")
    (tasks / "loop2.yaml").symlink_to("loop1.yaml")
    for command in ("validate", "run"):
        where = ("--runs-dir", system_cli.runs) if command == "run" else ()
        outcome = system_cli(command, tasks, *where, env={})
        assert outcome.code in (1, 2), outcome.output
        assert "internal error" not in outcome.err and "Traceback" not in outcome.err, outcome.err
        assert "loop1.yaml" in outcome.output


def test_a_run_dir_named_as_a_removed_run_the_tables_hold_is_refused(system_cli: SystemCli) -> None:
    """``rm -rf runs/ci && coder-eval run --run-dir runs/ci`` again: the tables (which outlive a run's folder) keep
    a run's rows under its folder's name, and the second run replaced the first's without a word. It is refused
    before it runs; a timestamped run skips a stamp the tables hold."""
    runs = system_cli.runs
    task = task_file(system_cli.folder / "tasks", "t", agent=NO_AGENT)
    first = system_cli("run", task, "--run-dir", runs / "ci", env={})
    assert first.code == 0, first.output
    tables = {p: p.read_bytes() for p in (runs / "tables").rglob("ci.parquet")}
    assert len(tables) == 5
    shutil.rmtree(runs / "ci")
    again = system_cli("run", task, "--run-dir", runs / "ci", env={})
    refused(again.code, again.err, "--run-dir", "an earlier run named ci", "give a new name")
    assert not (runs / "ci").exists()
    assert {p: p.read_bytes() for p in (runs / "tables").rglob("ci.parquet")} == tables


def test_a_new_run_folder_skips_a_stamp_the_tables_hold(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from coder_eval_dagster.core.runs import new_run_dir

    now = datetime(2026, 12, 7, 6, 0, 0, tzinfo=UTC)
    held = tmp_path / "tables" / "task_results" / "run_date=2026-12-06" / "2026-12-07T06-00-00Z.parquet"
    held.parent.mkdir(parents=True)
    held.write_bytes(b"")
    assert new_run_dir(tmp_path, now).name == "2026-12-07T06-00-00Z-2"


def test_evaluate_grades_a_folder_of_a_thousand_nested_folders(system_cli: SystemCli) -> None:
    """An agent's deep tree (1,100 nested folders, a 2.2 KB path) failed `evaluate` of its sandbox with Python's
    RecursionError (os.walk recurses): the copy walks iteratively."""
    graded = system_cli.folder / "graded"
    deepest = str(graded)
    os.mkdir(deepest)
    for _ in range(1100):  # (pathlib's and os's makedirs recurse too)
        deepest = os.path.join(deepest, "d")
        os.mkdir(deepest)
    Path(deepest, "a.txt").write_text("a\n")
    criterion = {"type": "file_exists", "path": "/".join(["d"] * 1100) + "/a.txt", "description": "deep"}
    task = task_file(system_cli.folder / "tasks", "g", agent=NO_AGENT, pre_run=[], success_criteria=[criterion])
    try:
        outcome = system_cli("evaluate", task, graded, "--run-dir", system_cli.folder / "out", env={})
        assert outcome.code == 0, outcome.output
    finally:  # pytest's own clean-up of old temporary folders recurses too
        for tree in (graded, system_cli.folder / "out"):
            remove_tree(tree, ignore_errors=True)
