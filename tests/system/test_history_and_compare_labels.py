"""What `coder-eval history` and `compare` name things by, as a user runs them: a failing criterion by a row that
failed it, two runs of the same id by their runs folders."""

from __future__ import annotations

import json
import shutil

import pytest

from ..support.helpers import write
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow


def test_a_templated_criterion_is_named_as_a_failing_row_wrote_it(system_cli: SystemCli) -> None:
    """A dataset's criterion description filled per row ("sum ${row.id}") is shown as the row that failed wrote it,
    never as one that passed (the analyst would look at the wrong row)."""
    folder = system_cli.folder / "tasks"
    rows = [{"id": "r1", "a": 1, "b": 1, "expected": 2}, {"id": "r2", "a": 2, "b": 2, "expected": 4}]
    rows.append({"id": "r3", "a": 1, "b": 2, "expected": 4})  # wrong: only r3 fails
    write(folder / "rows.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    adds = "python3 -c 'import sys; print(int(sys.argv[1]) + int(sys.argv[2]))' ${row.a} ${row.b}"
    criterion = {"type": "run_command", "command": adds, "expected_stdout": "${row.expected}"}
    task_file(
        folder,
        "sums",
        agent={"type": "none"},
        dataset={"paths": ["rows.jsonl"]},
        success_criteria=[criterion | {"description": "sum ${row.id}"}],
    )
    outcome, _ = system_cli.run(folder, env={})
    assert outcome.code == 1, outcome.output

    shown = system_cli("history", system_cli.runs, "--format", "json", env={})
    assert shown.code == 0, shown.output
    (failing,) = json.loads(shown.out)["failing_criteria"]
    assert (failing["description"], failing["failures"], failing["evaluated"]) == ("sum r3", 1, 3)


def test_two_runs_of_the_same_id_are_two_arms(system_cli: SystemCli) -> None:
    """Run ids are UTC seconds, unique within one runs folder only: two CI jobs' runs of the same second (or a run
    and its copy) were merged, one run folder gone from `runs` and both arms labelled alike."""
    folder = system_cli.folder / "tasks"
    task_file(folder, "same", agent={"type": "none"})
    outcome, run = system_cli.run(folder, env={})
    assert outcome.code == 0, outcome.output
    copy = system_cli.folder / "other" / run.path.name
    shutil.copytree(run.path, copy)
    shown = system_cli("compare", run.path, copy, "--format", "json", env={})
    assert shown.code == 0, shown.output
    compared = json.loads(shown.out)
    names = [f"runs/{run.path.name}", f"other/{run.path.name}"]
    assert list(compared["runs"]) == names and compared["runs"][names[1]] == str(copy)
    assert [arm["label"] for arm in compared["arms"]] == [f"default@{name}" for name in names]


def test_history_and_the_forecast_read_the_tables_of_a_runs_folder_named_with_glob_characters(
    system_cli: SystemCli,
) -> None:
    """DuckDB reads a table through a glob: a runs folder under `g[1]*?` matched no file, so `history` failed
    and the forecast saw no history at all."""
    folder = system_cli.folder / "tasks"
    task = task_file(folder, "plain", agent={"type": "none"})
    system_cli.runs = system_cli.folder / "g[1]*?" / "runs"
    assert system_cli.run(task, env={})[0].code == 0

    shown = system_cli("history", system_cli.runs, "--format", "json", env={})
    assert shown.code == 0, shown.output
    assert json.loads(shown.out)["pass_rate_per_day"][0]["evaluations"] == 1
    forecast = system_cli("run", task, "--runs-dir", system_cli.runs, "--estimate", env={})
    assert forecast.code == 0, forecast.output
    assert "history: 1 earlier evaluation(s) of 1 row-task(s)" in forecast.output


def test_a_compare_figure_keeps_a_long_task_id_whole(system_cli: SystemCli) -> None:
    """A 100-character id (the longest allowed) collapsed the forest plot's axes: matplotlib warned on the
    user's terminal and cut every label short, so rows could not be told apart."""
    folder = system_cli.folder / "tasks"
    for task_id in ("alpha", "L" * 100):
        task_file(folder, task_id, agent={"type": "none"})
    first, earlier = system_cli.run(folder, env={})
    system_cli.runs = system_cli.folder / "again"
    second, later = system_cli.run(folder, env={})
    assert first.code == second.code == 0, first.output + second.output
    page = system_cli.folder / "cmp.html"
    compared = system_cli("compare", earlier.path, later.path, "--format", "html", "-o", page, env={})
    assert compared.code == 0 and "Warning" not in compared.err, compared.output
    from PIL import Image

    with Image.open(page.with_name("cmp.forest_1.png")) as forest:
        assert forest.width >= 100 * 8  # ~8 px a character at 100 dpi: the whole id beside the plot


def test_a_criterion_failed_by_several_rows_says_its_text_is_one_of_theirs(system_cli: SystemCli) -> None:
    """Two rows failing a templated criterion were shown as one row's text failing twice."""
    folder = system_cli.folder / "tasks"
    rows = {"rows": [{"id": "r1"}, {"id": "r2"}, {"id": "r3"}]}
    check = {"type": "run_command", "command": "test ${row.id} = r1", "description": "row ${row.id} is r1"}
    task_file(folder, "rows", agent={"type": "none"}, dataset=rows, success_criteria=[check])
    assert system_cli.run(folder, env={})[0].code == 1
    shown = system_cli("history", system_cli.runs, "--format", "json", env={})
    (failing,) = json.loads(shown.out)["failing_criteria"]
    assert (failing["description"], failing["failures"]) == ("row r2 is r1 (one of 2 texts, as rows filled it)", 2)


def test_a_criterion_edited_between_runs_is_not_merged_with_the_one_before(system_cli: SystemCli) -> None:
    """History grouped failures by the criterion's place in its task: after an edit, a criterion that no longer
    exists and the one that replaced it were one line, named by the old text "as rows filled it" (no rows)."""
    folder = system_cli.folder / "tasks"
    exists = {"type": "file_exists", "path": "missing.txt", "description": "missing.txt exists"}
    builds = {"type": "run_command", "command": "false", "description": "the build passes"}
    renamed = {"type": "run_command", "command": "false", "description": "the build still passes"}
    for criterion in (exists, builds, renamed):
        task_file(folder, "changed", agent={"type": "none"}, success_criteria=[criterion])
        assert system_cli("run", folder, "--runs-dir", system_cli.runs, env={}).code == 1
    shown = system_cli("history", system_cli.runs, "--format", "json", env={})
    failing = {(line["description"], line["failures"]) for line in json.loads(shown.out)["failing_criteria"]}
    assert failing == {("missing.txt exists", 1), ("the build passes", 1), ("the build still passes", 1)}
