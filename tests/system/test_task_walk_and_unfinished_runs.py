"""What a folder path reads (never a runs folder inside it; linked files and folders followed), empty option values,
and the commands that need a finished run (``--retry-errors``, ``report --rebuild``) on one that never finished:
through the installed ``coder-eval``, as a user meets them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli, only_run, task_file

pytestmark = pytest.mark.slow

# An evaluation that leaves YAML files in its sandbox: a valid task file and one that is not.
PLANTED = "printf 'task_id: planted\\ndescription: p\\nagent: {type: none}\\nsandbox: {python: null}\\n"
PLANTED += "success_criteria: [{type: file_exists, path: a.txt, description: d}]\\n' > planted.yaml"


def test_a_task_folder_holding_its_runs_folder_reads_no_yaml_a_run_left(tmp_path: Path, system_cli: SystemCli) -> None:
    """``coder-eval run .`` twice, with the default ``runs/`` under ``.``: the second run reads only the user's task
    (nor the instance under ``.dagster``)."""
    task_file(
        tmp_path,
        "writer",
        agent={"type": "none"},
        pre_run=[{"command": "echo a > a.txt"}, {"command": PLANTED}, {"command": "echo 'task_id: broken' > b.yaml"}],
    )
    env = {"DAGSTER_HOME": str(tmp_path / ".dagster")}
    assert system_cli("run", ".", env=env).code == 0
    assert list((tmp_path / "runs").glob("*/default/writer/00/sandbox/planted.yaml"))  # what the walk must not read
    listed = system_cli("list", ".", env=env)
    assert (listed.code, listed.out) == (0, "default writer\n"), listed.output
    again = system_cli("run", ".", env=env)
    assert again.code == 0, again.output
    (latest,) = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("latest/run.json")]
    assert [t["task_id"] for t in latest["task_results"]] == ["writer"] and latest["skipped_tasks"] == []


def test_linked_task_files_and_folders_are_read_where_they_are(tmp_path: Path, system_cli: SystemCli) -> None:
    """A linked task file's relative dataset path is the real file's; a linked sub-folder is followed (a link back
    up is no loop); a folder with no task file says so."""
    write(tmp_path / "shared/data/rows.jsonl", '{"id": "a", "n": 1}\n')
    task_file(tmp_path / "shared/tasks", "t", agent={"type": "none"}, dataset={"paths": ["../data/rows.jsonl"]})
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite/t.yaml").symlink_to("../shared/tasks/t.yaml")
    linked = system_cli("validate", "suite/t.yaml", env={})
    assert (linked.code, linked.out) == (0, "OK shared/tasks/t.yaml\n"), linked.output

    (tmp_path / "suite2").mkdir()
    (tmp_path / "suite2/shared").symlink_to("../shared/tasks", target_is_directory=True)
    (tmp_path / "shared/tasks/up").symlink_to("..", target_is_directory=True)
    listed = system_cli("list", "suite2", env={})
    assert (listed.code, listed.out) == (0, "default t/a\n"), listed.output

    (tmp_path / "empty").mkdir()
    empty = system_cli("validate", "empty", env={})
    assert (empty.code, empty.out) == (0, "")
    assert empty.err == "coder-eval validate: no task files (*.yaml, *.yml) in empty\n"


@pytest.mark.parametrize("option", ["--runs-dir", "--junit", "-e", "--log-file"])
def test_an_empty_path_option_is_a_usage_error_not_the_current_folder(
    option: str, tmp_path: Path, system_cli: SystemCli
) -> None:
    task_file(tmp_path, "t", agent={"type": "none"})
    outcome = system_cli("run", "t.yaml", option, "", env={})
    assert outcome.code == 2, outcome.output
    assert outcome.err.endswith(": empty value (an unset variable?) (see coder-eval run --help)\n"), outcome.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.yaml"]  # no run folder, tables or index in the cwd


def _cut_short(evaluation: Path) -> None:
    """What a run killed mid-way leaves of an evaluation: no task.json (a retry had set the ERROR's aside)."""
    (evaluation / "task.json").replace(evaluation / "task.previous.json")
    (evaluation / "run_state.json").unlink(missing_ok=True)


def test_retry_errors_on_a_run_that_never_finished_points_to_resume(tmp_path: Path, system_cli: SystemCli) -> None:
    task_file(tmp_path / "tasks", "broken", agent={"type": "none"}, pre_run=[{"command": "exit 3"}])
    task_file(tmp_path / "tasks", "fine", agent={"type": "none"})
    first, run = system_cli.run(tmp_path / "tasks", env={})
    assert first.code == 1 and run.result("broken")["final_status"] == "ERROR"
    _cut_short(run.evaluation("broken"))

    retried = system_cli("run", "--retry-errors", run.path, env={})
    assert retried.code == 2, retried.output
    assert retried.err.strip().splitlines()[-1] == (
        f"coder-eval run: {run.path} is incomplete (1 evaluation(s) never finished); "
        f"finish it first with: coder-eval run --resume {run.path}"
    )
    assert system_cli("run", "--resume", run.path, env={}).code == 1  # finished: its ERROR is back
    assert run.result("broken")["final_status"] == "ERROR"
    again = system_cli("run", "--retry-errors", run.path, env={})
    assert again.code == 1 and "incomplete" not in again.err, again.output


def test_report_rebuild_refuses_a_run_that_never_finished(tmp_path: Path, system_cli: SystemCli) -> None:
    for task_id in ("one", "two"):
        task_file(tmp_path / "tasks", task_id, agent={"type": "none"})
    assert system_cli.run(tmp_path / "tasks", env={})[0].code == 0
    run = only_run(system_cli.runs)
    (run.path / "run.md").unlink()
    shown = system_cli("report", run.path, env={})  # the run folder is only read (a read-only artifact reports too)
    assert shown.code == 0 and "2 evaluations" in shown.out and not (run.path / "run.md").exists(), shown.output
    (run.path / "run.json").unlink()
    (run.evaluation("two") / "task.json").unlink()  # killed before its scoring ended
    hint = f"{run.path} is incomplete (1 evaluation(s) never finished); finish it first with: coder-eval run --resume"

    rebuilt = system_cli("report", run.path, "--rebuild", env={})
    assert rebuilt.code == 2 and rebuilt.err == f"coder-eval report: {hint} {run.path}\n", rebuilt.output
    assert not (run.path / "run.json").exists()
    shown = system_cli("report", run.path, env={})
    assert shown.code == 2 and shown.err == f"coder-eval report: no run.json: {hint} {run.path}\n", shown.output
    compared = system_cli("compare", run.path, env={})  # as report: no verdict over the evaluations that finished
    assert compared.code == 2 and compared.err == f"coder-eval compare: {hint} {run.path}\n", compared.output

    from coder_eval_dagster.core.run_lock import working_on

    with working_on(run.path):  # its run is going in another process: a resume would be refused, wait for it
        going = system_cli("report", run.path, "--rebuild", env={})
    assert going.code == 2 and going.err == (
        f"coder-eval report: {run.path} is still being run by another process (1 evaluation(s) to go)\n"
    ), going.output


def test_a_rescore_keeps_the_task_path_the_run_recorded(system_cli: SystemCli) -> None:
    """A run started on `tasks/t.yaml` records that path; its rescore wrote the absolute one into every row."""
    task_file(system_cli.folder / "tasks", "t", agent={"type": "none"})
    outcome, run = system_cli.run(Path("tasks") / "t.yaml", env={})  # relative to the command's folder
    assert outcome.code == 0 and run.summary["task_results"][0]["task_path"] == "tasks/t.yaml", outcome.output
    assert system_cli("rescore", run.path, env={}).code == 0
    assert run.summary["task_results"][0]["task_path"] == "tasks/t.yaml"
