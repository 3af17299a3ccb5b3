"""``$TASK_DIR`` in a ``run_command`` through the installed ``coder-eval run``: a checker kept beside the task runs
(coder_eval's tasks/n8n/calculator), on a private copy of the task's folder shown beside the reference folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ..support.helpers import write
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow

CHECKER = """\
import os, pathlib, sys
here = pathlib.Path(__file__).parent
assert here == pathlib.Path(os.environ["TASK_DIR"]), (here, os.environ["TASK_DIR"])
assert (here / "expected.txt").read_text() == pathlib.Path(sys.argv[1]).read_text()
"""


def _checked_task(folder: Path, command: str, **changes: Any) -> Path:
    """An agentless task in ``folder`` whose pre_run writes a.txt, with a checker and its expected text beside it."""
    write(folder / "check.py", CHECKER)
    write(folder / "expected.txt", "a\n")
    check = {"type": "run_command", "command": command, "description": "checked"}
    return task_file(folder, "checked", agent={"type": "none"}, success_criteria=[check], **changes)


def _statuses(system_cli: SystemCli, task: Path) -> dict[str, str]:
    outcome, run = system_cli.run(task, env={})
    assert run.summary["task_results"], outcome.output
    return {row["task_id"]: row["status"] for row in run.summary["task_results"]}


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_checker_beside_the_task_runs_for_each_row_of_its_dataset(tmp_path: Path, system_cli: SystemCli) -> None:
    folder = tmp_path / "tasks/calc"
    write(folder / "rows.jsonl", '{"id": "r1"}\n{"id": "r2"}\n')
    task = _checked_task(folder, "python3 $TASK_DIR/check.py a.txt", dataset={"paths": ["rows.jsonl"]})
    assert _statuses(system_cli, task) == {"checked/r1": "SUCCESS", "checked/r2": "SUCCESS"}
    assert not list(system_cli.runs.rglob("task_dir"))  # each copy removed once its criteria ran


def test_a_command_cannot_write_into_task_dir(tmp_path: Path, system_cli: SystemCli) -> None:
    """The copy is read-only to the criteria's commands (one running the agent's code must not rewrite the checker a
    later one runs), and the task's folder is never written."""
    folder = tmp_path / "tasks/calc"
    command = '! (echo b > "$TASK_DIR/expected.txt") && ! (echo c > ${TASK_DIR}/new.txt) && grep -qx a $TASK_DIR/*.txt'
    task = _checked_task(folder, command)
    before = _tree(folder)
    assert _statuses(system_cli, task) == {"checked": "SUCCESS"}  # both writes refused, the file as the task has it
    assert _tree(folder) == before


def test_task_dir_and_reference_dir_are_shown_at_once(tmp_path: Path, system_cli: SystemCli) -> None:
    folder = tmp_path / "tasks/calc"
    write(folder / "ref/expected.txt", "a\n")
    both = 'test "$REFERENCE_DIR" != "$TASK_DIR" && diff $REFERENCE_DIR/expected.txt $TASK_DIR/ref/expected.txt'
    task = _checked_task(
        folder,
        f"{both} && python3 $TASK_DIR/check.py $REFERENCE_DIR/expected.txt",
        reference={"directory": "ref"},
        pre_run=[{"command": 'echo "task=$TASK_DIR ref=$REFERENCE_DIR" > seen.txt'}],
    )
    outcome, run = system_cli.run(task, env={})
    assert run.summary["task_results"][0]["status"] == "SUCCESS", outcome.output
    assert (run.evaluation("checked") / "sandbox/seen.txt").read_text() == "task= ref=\n"  # criteria only


def test_a_task_folder_over_the_cap_is_not_copied_and_its_criterion_says_so(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    folder = tmp_path / "tasks"
    folder.mkdir(parents=True)
    with (folder / "big.bin").open("wb") as big:  # sparse: 65 MiB of size, no disk
        big.truncate(65 * 2**20)
    task = _checked_task(folder, "python3 $TASK_DIR/check.py a.txt")
    outcome, run = system_cli.run(task, env={})
    assert run.summary["task_results"][0]["status"] != "SUCCESS", outcome.output
    (criterion,) = run.result("checked")["success_criteria_results"]
    assert "20000 files, 64 MiB" in criterion["error"], criterion
    assert os.path.getsize(folder / "big.bin") == 65 * 2**20


def test_a_familys_shared_checker_is_reached_above_the_task_and_hidden_folders_stay_out(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """coder_eval's task families keep one checker beside their tasks (tasks/n8n/season: $TASK_DIR/../shared), and a
    script may read TASK_DIR from its environment (uipath_flow/add_terminate_node) rather than its command line."""
    family = tmp_path / "tasks/n8n"
    write(family / "shared/check.py", "import os, sys; sys.exit(0 if os.path.isdir(os.environ['TASK_DIR']) else 1)\n")
    write(family / ".secrets/token", "not for criteria\n")
    write(family / "season/fixture/expected.txt", "a\n")
    reads_environment = (
        "python3 -c \"import os; print(open(os.path.join(os.environ['TASK_DIR'], 'fixture/expected.txt')).read())\""
    )
    checks = [
        {"type": "run_command", "command": "python3 $TASK_DIR/../shared/check.py", "description": "shared"},
        {"type": "run_command", "command": reads_environment, "expected_stdout": "a", "description": "environ"},
        {"type": "run_command", "command": "test ! -e $TASK_DIR/../.secrets", "description": "hidden left out"},
    ]
    task = task_file(family / "season", "season", agent={"type": "none"}, success_criteria=checks)
    outcome, run = system_cli.run(task, env={})
    results = run.result("season")["success_criteria_results"]
    assert [criterion["score"] for criterion in results] == [1.0, 1.0, 1.0], (outcome.output, results)


def test_a_process_left_by_an_earlier_stage_never_sees_the_staged_copies(tmp_path: Path, system_cli: SystemCli) -> None:
    """A daemon a pre_run (or an agent) left running would read the reference while the criteria run, and could
    copy the answer into the sandbox or rewrite a staged checker: it is ended before the copies are made."""
    folder = tmp_path / "tasks/calc"
    write(folder / "ref/answer.txt", "REFERENCE-ANSWER-42\n")
    spy = (
        "while true; do cat /tmp/coder-eval-*/*/answer.txt /tmp/coder-eval-*/answer.txt >> spied.txt 2>/dev/null; done"
    )
    task = _checked_task(
        folder,
        "python3 $TASK_DIR/check.py a.txt",
        reference={"directory": "ref"},
        pre_run=[{"command": "echo a > a.txt"}, {"command": f"nohup sh -c '{spy}' >/dev/null 2>&1 &"}],
    )
    write(folder / "expected.txt", "a\n")
    outcome, run = system_cli.run(task, env={})
    assert run.summary["task_results"][0]["status"] == "SUCCESS", outcome.output
    spied = run.evaluation("checked") / "sandbox/spied.txt"
    assert not spied.exists() or "REFERENCE-ANSWER-42" not in spied.read_text()
