"""The folders staged for the criteria (``$TASK_DIR`` with the folder above it, ``reference: {directory}``) through
the installed ``coder-eval run``: they never hold the harness's own places (the user's home, ``DAGSTER_HOME``, a runs
folder, a ``.env``), and a task path scores the same however it is written. The criteria stand for a checker that
runs the agent's code: what their commands can read, that code can."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..support.fake_anthropic import Script
from ..support.helpers import write
from .conftest import SystemCli, anthropic_environment, new_key, only_run, replay_task_file, task_file

pytestmark = pytest.mark.slow

# What a command finds of the harness's files anywhere it can reach from a staged folder: "none", else their paths.
HARNESS_FILES = (
    r"\( -name secrets.txt -o -name '*.db' -o -name dagster.yaml -o -name task.json -o -name '*.env*' -o -name .netrc"
    r" -o -name .git-credentials \)"
)


def _found(folder: str) -> dict[str, Any]:
    """A criterion that prints the harness's files found under ``folder`` (as its command names it), "none" if none."""
    command = f'found=$(find {folder} {HARNESS_FILES} 2>/dev/null); echo "${{found:-none}}"'
    return {"type": "run_command", "command": command, "expected_stdout": "none", "description": f"find {folder}"}


def _check(command: str) -> dict[str, Any]:
    return {"type": "run_command", "command": command, "description": command}


def _all_pass(output: str, result: dict[str, Any]) -> None:
    """Every criterion passed; else what each found (its stdout names the files it should not have)."""
    criteria = result["success_criteria_results"]
    seen = {criterion["description"]: (criterion["score"], criterion["evidence"]) for criterion in criteria}
    assert criteria and all(criterion["score"] == 1.0 for criterion in criteria), (output, seen)


def _environment(home: Path, dagster_home: Path) -> dict[str, str]:
    """A user's home and Dagster home of the test's own (never the machine's)."""
    return {"HOME": str(home), "DAGSTER_HOME": str(dagster_home), "TELEMETRY_ENABLED": "false"}


def test_a_task_folder_in_the_home_stages_only_itself(tmp_path: Path, system_cli: SystemCli) -> None:
    """A task at ``~/evals/task.yaml`` with DAGSTER_HOME at ``~/dagster_home`` (Dagster's docs' spelling): the folder
    above the task's is the home, never copied (its files, the Dagster home's databases, the runs)."""
    write(tmp_path / "secrets.txt", "the user's own\n")
    evals = tmp_path / "evals"
    write(evals / "expected.txt", "a\n")
    checks = [_found("$TASK_DIR/.."), _check("test -f $TASK_DIR/expected.txt")]
    task = task_file(evals, "homed", agent={"type": "none"}, success_criteria=checks)
    outcome, run = system_cli.run(task, env=_environment(tmp_path, system_cli.home))
    _all_pass(outcome.output, run.result("homed"))


def test_the_family_folder_leaves_out_dagster_home_runs_folders_and_env(tmp_path: Path, system_cli: SystemCli) -> None:
    """A task family's folder (``$TASK_DIR/../shared`` still reached) holding the Dagster home, this run's runs
    folder, an older runs folder and a ``.env``: none of them is in the copy."""
    home = tmp_path / "home"
    family = tmp_path / "work/fam"
    write(family / "shared/check.sh", 'test -f "$TASK_DIR/expected.txt"\n')
    write(family / ".env", f"ANTHROPIC_API_KEY={new_key()}\n")
    write(family / "t1/expected.txt", "a\n")
    checks = [_found("$TASK_DIR/.."), _check("sh $TASK_DIR/../shared/check.sh")]
    task = task_file(family / "t1", "t1", agent={"type": "none"}, success_criteria=checks)
    env = _environment(home, family / "dagster_home")
    earlier = system_cli("run", task, "--runs-dir", family / "old_runs", env=env)
    assert list((family / "old_runs").rglob("task.json")), earlier.output
    outcome = system_cli("run", task, "--runs-dir", family / "runs", env=env)
    _all_pass(outcome.output, only_run(family / "runs").result("t1"))


def test_a_reference_folder_leaves_out_env_files_and_dagster_home(tmp_path: Path, system_cli: SystemCli) -> None:
    """``reference: {directory: "."}`` beside the ``.env`` the CLI took the run's key from and the default Dagster
    home (``./.dagster``): neither is copied, a ``.env`` below it neither; the reference's other dot files are."""
    folder = tmp_path / "project"
    key = new_key()
    write(folder / ".env", f"ANTHROPIC_API_KEY={key}\n")
    write(folder / "sub/.env", f"OTHER_TOKEN={key}\n")
    for kin in (".env.local", "prod.env", ".netrc", ".git-credentials"):  # (its kin: credentials files too)
        write(folder / kin, f"machine h password {key}\n")
    write(folder / ".keep_me", "part of the reference\n")
    checks = [_found("$REFERENCE_DIR"), _check("test -f $REFERENCE_DIR/.keep_me")]
    task = task_file(folder, "refd", agent={"type": "none"}, reference={"directory": "."}, success_criteria=checks)
    outcome = system_cli("run", task.name, env=_environment(tmp_path / "home", folder / ".dagster"), cwd=folder)
    assert (folder / ".dagster/dagster.yaml").is_file(), outcome.output
    _all_pass(outcome.output, only_run(folder / "runs").result("refd"))


def test_a_judge_shown_the_reference_folder_is_shown_no_env_file(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """``include_reference: true`` sends the text of the reference folder's files to the judge's model: the same
    files its copy holds, so no ``.env``."""
    fake = scripted_anthropic(Script([], verdict={"score": 1.0, "rationale": "ok"}))
    tasks = tmp_path / "tasks"
    write(tasks / ".env", "MARKER_TOKEN=DOTENV-TOP-3e8d\n")
    write(tasks / "sub/.env", "MARKER_TOKEN=DOTENV-SUB-3e8d\n")
    write(tasks / "solution.py", "ANSWER = 42  # REFERENCE-3e8d\n")
    judge = {"type": "llm_judge", "description": "llm", "prompt": "Grade.", "include_reference": True}
    task = replay_task_file(tasks, "judged", [{"text": "done"}], reference={"directory": "."}, success_criteria=[judge])
    env = {**anthropic_environment(fake.url, new_key()), **_environment(tmp_path / "home", system_cli.home)}
    outcome, _ = system_cli.run(task, env=env)
    shown = str(fake.script.requests)
    assert "REFERENCE-3e8d" in shown, outcome.output
    assert "DOTENV-" not in shown


def test_a_relative_task_path_stages_what_an_absolute_one_does(tmp_path: Path, system_cli: SystemCli) -> None:
    """``coder-eval run task.yaml`` from the task's folder reaches the family's shared checker as the absolute path
    does (its folder was ``.``, whose parent is ``.``)."""
    family = tmp_path / "fam"
    write(family / "shared/check.sh", "true\n")
    checks = [_check("sh $TASK_DIR/../shared/check.sh")]
    task = task_file(family / "t1", "t1", agent={"type": "none"}, success_criteria=checks)
    env = _environment(tmp_path / "home", system_cli.home)
    for runs, path in (("relative", task.name), ("absolute", str(task))):
        outcome = system_cli("run", path, "--runs-dir", tmp_path / runs, env=env, cwd=task.parent)
        _all_pass(f"{path}: {outcome.output}", only_run(tmp_path / runs).result("t1"))


def test_a_folder_that_is_the_home_is_never_staged_for_the_criteria(tmp_path: Path, system_cli: SystemCli) -> None:
    """What a copy leaves out below its top could not cover the top: ``reference: {directory: ../..}`` from
    ``~/evals/t1`` copied the whole home, and a task at the home's top staged the home as ``$TASK_DIR``."""
    write(tmp_path / "secrets.txt", "the user's own\n")
    referenced = task_file(
        tmp_path / "evals/t1",
        "referenced",
        agent={"type": "none"},
        reference={"directory": "../.."},
        success_criteria=[_check("ls $REFERENCE_DIR")],
    )
    at_top = task_file(tmp_path, "at_top", agent={"type": "none"}, success_criteria=[_check("ls $TASK_DIR")])
    outcome, run = system_cli.run(referenced, env=_environment(tmp_path, system_cli.home))
    ref = run.result("referenced")
    assert outcome.code == 1 and ref["final_status"] == "ERROR", (ref["final_status"], outcome.output)
    assert "reference.directory ../..: it is the user's home: it is never copied" in ref["error_message"]
    other_runs = tmp_path / "more-runs"
    outcome = system_cli("run", at_top, "--runs-dir", other_runs, env=_environment(tmp_path, system_cli.home))
    (criterion,) = only_run(other_runs).result("at_top")["success_criteria_results"]
    assert criterion["score"] == 0.0 and "it is the user's home" in str(criterion["error"]), criterion
    assert "the user's own" not in outcome.output + str(ref) + str(criterion)
