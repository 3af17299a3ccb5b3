"""A coder_eval user's paths through the installed ``coder-eval`` (issue 33): a folder with files that are not tasks
or do not validate, a claude-code task with no key, ``-e NAME``, and the selecting options."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..support.helpers import write, write_task
from .conftest import SystemCli, claude_code_task, only_run, task_file

pytestmark = pytest.mark.slow


class _Planted:
    """A pickle that runs a command when loaded (``os.system``): what a replaced snapshot could hold."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def _agentless(folder: Path, task_id: str, **changes: Any) -> Path:
    return task_file(folder, task_id, **{"agent": {"type": "none"}, **changes})


def test_a_folder_run_skips_what_is_not_a_task_records_what_is_invalid_and_fails(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    tasks = tmp_path / "tasks"
    _agentless(tasks, "good", tags=["lifecycle:generate"])
    write(tasks / "reference_flows/a/metadata.yaml", "name: flow a\nsteps: [read, write]\n")
    _agentless(tasks, "broken", success_criteria=[{"type": "file_exists", "description": "no path"}])
    outcome, run = system_cli.run(tasks, "--tags", "lifecycle:generate", env={})
    assert outcome.code == 1, outcome.output  # the run went on, and nothing passes silently
    assert [task["task_id"] for task in run.summary["task_results"]] == ["good"]
    assert run.summary["task_results"][0]["status"] == "SUCCESS"
    (skipped,) = run.summary["skipped_tasks"]
    assert skipped["path"] == str(tasks / "broken.yaml")
    assert "success_criteria.0.path: Field required" in skipped["reason"]
    broken = str(tasks / "broken.yaml")
    run_md = (run.path / "run.md").read_text(encoding="utf-8")
    said = [line for line in outcome.err.splitlines() + run_md.splitlines() if broken in line]
    assert len(said) == 2 and all(line.count(broken) == 1 for line in said), said  # the path once, its line after
    assert f"note: skipped, not a task file (no task_id): {tasks / 'reference_flows/a/metadata.yaml'}" in outcome.err
    assert run.summary["passed"] is False


def test_a_claude_code_task_with_no_key_is_refused_before_any_sandbox(tmp_path: Path, system_cli: SystemCli) -> None:
    claude_code_task(tmp_path / "tasks", "needs-key")
    _agentless(tmp_path / "tasks", "agentless")
    outcome = system_cli("run", tmp_path / "tasks", "--runs-dir", system_cli.runs, env={}, timeout=120)
    assert outcome.code == 2, outcome.output
    assert outcome.err.strip().splitlines()[-1] == (
        "coder-eval run: ANTHROPIC_API_KEY is not set: the claude-code agent of needs-key needs it (no sandbox was made)"
    )
    assert not system_cli.runs.exists() or not any(system_cli.runs.rglob("sandbox"))

    # codex too: each evaluation made its sandbox and ran its pre_run, then ended ERROR for the key
    codex = {"task_id": "codex-key", "description": "d", "initial_prompt": "p", "agent": {"type": "codex"}}
    write_task(
        tmp_path / "codex",
        codex | {"success_criteria": [{"type": "file_exists", "path": "a", "description": "a"}]},
        "c.yaml",
    )
    outcome = system_cli("run", tmp_path / "codex", "--runs-dir", system_cli.runs, env={}, timeout=120)
    assert outcome.code == 2, outcome.output
    assert outcome.err.strip().splitlines()[-1] == (
        "coder-eval run: CODEX_API_KEY is not set: the codex agent of codex-key needs it (no sandbox was made)"
    )


def test_experiment_by_name_and_the_selecting_options(tmp_path: Path, system_cli: SystemCli) -> None:
    _agentless(tmp_path / "tasks", "kept", tags=["smoke"])
    _agentless(tmp_path / "tasks", "excluded", tags=["smoke", "slow"])
    write(
        tmp_path / "experiments/ab.yaml",
        "experiment_id: ab\nvariants:\n  - {variant_id: once}\n  - {variant_id: twice, repeats: 2}\n",
    )
    outcome, run = system_cli.run(tmp_path / "tasks", "-e", "ab", "--exclude-tags", "slow", env={})
    assert outcome.code == 0, outcome.output
    rows = sorted((t["variant_id"], t["task_id"], t["replicate_index"]) for t in run.summary["task_results"])
    assert rows == [("once", "kept", 0), ("twice", "kept", 0), ("twice", "kept", 1)]
    assert run.summary["experiment"] == "ab"
    again = tmp_path / "runs-again"
    options = ("-e", "ab", "--repeats", "1", "--driver", "tempdir", "--tags", "smoke", "--runs-dir", again)
    assert system_cli("run", tmp_path / "tasks", *options, env={}).code == 0
    rows = sorted(
        (t["variant_id"], t["task_id"], t["replicate_index"]) for t in only_run(again).summary["task_results"]
    )
    assert rows == [("once", "excluded", 0), ("once", "kept", 0), ("twice", "excluded", 0), ("twice", "kept", 0)]
    unknown = system_cli("run", tmp_path / "tasks", "-e", "nope", "--runs-dir", system_cli.runs, env={})
    assert unknown.code == 2 and unknown.err.strip() == (
        "no such experiment file (nor experiments/nope.yaml, experiments/nope.yml or experiments/nope;"
        " experiments here: ab): nope"
    )
    bad_driver = system_cli("list", tmp_path / "tasks", "--driver", "vm", env={})
    assert bad_driver.code == 2 and "argument --driver: Input should be 'tempdir' or 'docker'" in bad_driver.err


def test_a_reference_folder_reaches_the_criteria_under_the_default_relative_runs_folder(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """As a user runs it: from the project folder, relative paths, no --runs-dir (the default ``runs/``)."""
    write(tmp_path / "ref/sol.txt", "42\n")
    check = {"type": "run_command", "command": "test -f $REFERENCE_DIR/sol.txt", "description": "reference seen"}
    _agentless(tmp_path, "refonly", reference={"directory": "ref"}, success_criteria=[check])
    outcome = system_cli("run", "refonly.yaml", env={})
    assert outcome.code == 0, outcome.output
    assert only_run(tmp_path / "runs").summary["task_results"][0]["status"] == "SUCCESS"


def test_evaluate_grades_without_the_projects_base_experiment(tmp_path: Path, system_cli: SystemCli) -> None:
    """A coder_eval project has experiments/default.yaml; grading a directory resolves no experiment (as coder_eval's
    evaluate does not), so neither its variants nor its defaults (here a pre_run that would remove a.txt) apply."""
    write(
        tmp_path / "experiments/default.yaml",
        "experiment_id: default\nvariants: [{variant_id: default}]\ndefaults:\n  pre_run: [{command: rm -f a.txt}]\n",
    )
    _agentless(tmp_path, "graded", pre_run=[])
    write(tmp_path / "workspace/a.txt", "a\n")
    outcome = system_cli("evaluate", "graded.yaml", "workspace", "--run-dir", "graded-run", env={})
    assert outcome.code == 0, outcome.output
    assert "All criteria passed! ✓" in outcome.out


def test_junit_fails_a_run_that_fails_only_on_its_suite_gate_and_lists_what_was_left_out(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """CI reads the JUnit file: a run whose rows all pass but whose suite threshold is not met exits 1, and its JUnit
    says so (coder_eval's ``suite-gates`` testsuite); an invalid task file left out of the folder is ``<skipped>``."""
    import xml.etree.ElementTree as ET

    tasks = tmp_path / "tasks"
    write(tasks / "rows.jsonl", '{"id": "r1"}\n{"id": "r2"}\n')
    gated = {"type": "run_command", "command": "true", "description": "ok", "suite_thresholds": {"count": 5}}
    _agentless(tasks, "suite", dataset={"paths": ["rows.jsonl"]}, success_criteria=[gated])
    _agentless(tasks, "broken", success_criteria=[{"type": "file_exists", "description": "no path"}])
    outcome = system_cli("run", tasks, "--runs-dir", system_cli.runs, "--junit-xml", "ci.xml", env={})
    assert outcome.code == 1, outcome.output
    root = ET.parse(tmp_path / "ci.xml").getroot()
    suites = {suite.get("name"): suite for suite in root}
    assert (suites["default"].get("tests"), suites["default"].get("failures")) == ("2", "0")  # the rows passed
    (gate,) = suites["suite-gates"]
    assert gate.get("name") == "default/suite" and gate.find("failure").text == "count: 2 < 5"
    (left_out,) = suites["skipped"]
    assert left_out.get("name") == str(tasks / "broken") and left_out.find("skipped") is not None
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("4", "1", "1")


def test_rescore_leaves_out_the_invalid_file_its_folder_run_left_out(tmp_path: Path, system_cli: SystemCli) -> None:
    tasks = tmp_path / "tasks"
    _agentless(tasks, "good")
    _agentless(tasks, "broken", success_criteria=[{"type": "file_exist", "path": "a.txt", "description": "typo"}])
    outcome, run = system_cli.run(tasks, env={})
    assert outcome.code == 1, outcome.output  # the left-out file fails the run, the good task passed
    rescored = system_cli("rescore", run.path, env={})
    assert rescored.code == 1 and "unknown type" not in rescored.err, rescored.output
    after = only_run(system_cli.runs).summary
    assert [(row["task_id"], row["status"]) for row in after["task_results"]] == [("good", "SUCCESS")]
    assert [Path(skipped["path"]).name for skipped in after["skipped_tasks"]] == ["broken.yaml"]


def test_an_unusable_junit_path_is_refused_before_the_run_and_report_names_the_path_asked_for(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    _agentless(tmp_path, "good")
    (tmp_path / "a-folder").mkdir()
    for junit, why in (("a-folder", "is a folder"), ("/proc/nope/ci.xml", "cannot be written")):
        outcome = system_cli("run", "good.yaml", "--runs-dir", system_cli.runs, "--junit-xml", junit, env={})
        assert outcome.code == 2 and why in outcome.err and junit in outcome.err, outcome.output
        assert not system_cli.runs.exists()  # refused before anything ran
    outcome, run = system_cli.run(tmp_path / "good.yaml", env={})
    assert outcome.code == 0, outcome.output
    refused = system_cli("report", run.path, "-o", "a-folder", env={})
    assert (
        refused.code == 2 and refused.err.strip() == "coder-eval: cannot use a-folder: Is a directory; check that path"
    )


def test_validate_finds_the_duplicate_task_id_that_run_refuses(tmp_path: Path, system_cli: SystemCli) -> None:
    _agentless(tmp_path / "tasks", "same")
    write(tmp_path / "tasks/copy.yaml", (tmp_path / "tasks/same.yaml").read_text())
    checked = system_cli("validate", "tasks", env={})
    assert checked.code == 1, checked.output
    assert "tasks/same.yaml:1: task_id: duplicate task_id 'same' (also in tasks/copy.yaml)" in checked.err


def test_damaged_run_files_are_named_in_one_line_and_rebuild_mends_run_json(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """Exit 3 says "a bug in coder-eval": a damaged file of a run folder is bad input, named, exit 2."""
    outcome, run = system_cli.run(_agentless(tmp_path, "good"), env={})
    assert outcome.code == 0, outcome.output
    folder = run.path
    (folder / "run.json").write_text('{"run_id": ')
    compared = system_cli("compare", folder, env={})
    assert compared.code == 2 and "not JSON" in compared.err and str(folder / "run.json") in compared.err
    rebuilt = system_cli("report", folder, "--rebuild", env={})
    assert rebuilt.code == 0 and run.summary["task_results"][0]["status"] == "SUCCESS", rebuilt.output
    whole = (folder / "run.json").read_bytes()
    (folder / "run.json").write_bytes(whole + b"\xff")  # a byte that is not UTF-8: bad input, not a bug (exit 3)
    for args in (("report", folder), ("rescore", folder)):
        refused = system_cli(*args, env={})
        assert refused.code == 2 and "not JSON" in refused.err and str(folder / "run.json") in refused.err, (
            refused.output
        )
    (folder / "run.json").write_bytes(whole)

    plan = (folder / "run_plan.json").read_text()
    (folder / "run_plan.json").write_text("{")
    for args in (("run", "--resume", folder), ("rescore", folder)):
        refused = system_cli(*args, env={})
        assert refused.code == 2 and "not JSON" in refused.err and "run_plan.json" in refused.err, refused.output
    (folder / "run_plan.json").write_text(plan)
    (folder / "snapshot.pickle").write_bytes(b"garbage\n")
    refused = system_cli("rescore", folder, env={})
    assert refused.code == 2 and "not a snapshot this coder-eval wrote" in refused.err, refused.output
    assert str(folder / "snapshot.pickle") in refused.err

    for planted, said in (
        (pickle.dumps(_Planted(tmp_path / "ran")), "it names posix.system, which no snapshot holds"),
        (pickle.dumps(7), "it holds a int"),
    ):
        (folder / "snapshot.pickle").write_bytes(planted)  # a run folder handed around, its snapshot replaced
        for args in (("rescore", folder), ("run", "--resume", folder), ("report", folder, "--rebuild")):
            refused = system_cli(*args, env={})
            assert refused.code == 2 and said in refused.err, (args, refused.output)
        assert not (tmp_path / "ran").exists()  # what the pickle named never ran

    (next(system_cli.runs.glob("tables/task_results/*/*.parquet"))).write_bytes(b"not parquet")
    history = system_cli("history", system_cli.runs, env={})
    assert history.code == 2 and "a table file cannot be read" in history.err, history.output
    for outcome in (compared, refused, history):
        assert "internal error" not in outcome.err and "Traceback" not in outcome.err


def test_a_replay_stopped_mid_turn_gives_no_final_reply_and_soft_budgets_warn(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """coder_eval's later ``expected_tool_calls`` is a soft budget (not refused as a misspelt ``max_tool_calls``);
    it and ``expected_turns`` warn when overrun; a turn the early stop cut records no final reply."""
    commands = ["echo one > one.txt", "rm -rf forbidden; echo two > two.txt", "echo three > three.txt"]
    calls = [{"tool": "Bash", "command": command} for command in commands]
    write(tmp_path / "tasks/traj.yaml", yaml.safe_dump({"turns": [{"calls": calls, "text": "Finished: all three."}]}))
    guard = {"type": "command_executed", "command_pattern": "rm -rf", "min_count": 0, "max_count": 0}
    task = task_file(
        tmp_path / "tasks",
        "cut",
        agent={"type": "replay", "trajectory": "traj.yaml"},
        run_limits={"expected_turns": 1, "expected_tool_calls": 1},
        success_criteria=[{**guard, "description": "never rm -rf", "stop_early": {}}],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 1, outcome.output
    result = run.result("cut")
    (iteration,) = result["iterations"]
    assert result["stopped_early"] and [turn["text"] for turn in iteration["turns"]] == [None]
    assert iteration["agent_output"] == "" and result["visible_turns"] == 2
    assert result["warnings"] == [
        "used 2 visible turns, over run_limits.expected_turns 1 (x1.5 = 1.5)",
        "used 2 tool calls, over run_limits.expected_tool_calls 1",
    ]


def test_deleting_a_task_json_and_resuming_runs_that_evaluation_again(tmp_path: Path, system_cli: SystemCli) -> None:
    """coder_eval's docs: "delete a task's task.json to force a re-run". The resume kept the checkpoint's sandbox and
    agent work and only scored them again, so the old verdict came back; the other evaluation stays as it was."""
    tasks = tmp_path / "tasks"
    stamp = {"pre_run": [{"command": "date +%s%N > stamp.txt && echo a > a.txt"}]}
    _agentless(tasks, "again", **stamp)
    _agentless(tasks, "kept", **stamp)
    outcome, run = system_cli.run(tasks, env={})
    assert outcome.code == 0, outcome.output
    before = {name: (run.evaluation(name) / "sandbox/stamp.txt").read_text() for name in ("again", "kept")}
    (run.evaluation("again") / "task.json").unlink()

    resumed = system_cli("run", "--resume", run.path, env={})

    assert resumed.code == 0, resumed.output
    after = {name: (run.evaluation(name) / "sandbox/stamp.txt").read_text() for name in ("again", "kept")}
    assert after["again"] != before["again"] and after["kept"] == before["kept"]
    assert run.result("again")["final_status"] == "SUCCESS"


def test_a_resume_started_in_another_folder_reads_the_tasks_from_where_the_run_started(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """`run tasks` then `run --resume` from elsewhere: the task's trajectory and template folder, relative to a task
    file the run named relatively, were looked for from the current folder, and every redone evaluation was an ERROR.
    """
    tasks = tmp_path / "tasks"
    write(tasks / "tpl" / "given.txt", "given\n")
    write(
        tasks / "replay.yaml",
        yaml.safe_dump({"turns": [{"calls": [{"tool": "Bash", "command": "cp given.txt a.txt"}]}]}),
    )
    _agentless(
        tasks,
        "moved",
        agent={"type": "replay", "trajectory": "replay.yaml"},
        initial_prompt="p",
        sandbox={"python": None, "template_sources": [{"type": "template_dir", "path": "tpl"}]},
        pre_run=[],
    )
    outcome = system_cli("run", "tasks", "--runs-dir", "runs", env={})
    assert outcome.code == 0, outcome.output
    run = only_run(system_cli.runs)
    (run.evaluation("moved") / "task.json").unlink()  # coder_eval's way to have it run again
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    resumed = system_cli("run", "--resume", run.path, env={}, cwd=elsewhere)

    assert resumed.code == 0, resumed.output
    assert run.result("moved")["final_status"] == "SUCCESS"
    assert run.summary["task_results"][0]["task_path"] == "tasks/moved.yaml"  # as the run recorded it


def test_report_html_to_a_file_writes_the_one_evaluations_report(tmp_path: Path, system_cli: SystemCli) -> None:
    """coder_eval's docs: `report RUN -f html -o FILE` writes to FILE "when exactly one task is found"; refused here."""
    outcome, run = system_cli.run(_agentless(tmp_path / "tasks", "one"), env={})
    assert outcome.code == 0, outcome.output
    written = system_cli("report", run.path, "-f", "html", "-o", tmp_path / "out" / "one.html", env={})
    assert written.code == 0 and "[OK] Wrote" in written.out, written.output
    page = (tmp_path / "out" / "one.html").read_text()
    assert "<!DOCTYPE html>" in page and "one" in page
    evaluation = run.evaluation("one")  # coder_eval's docs name an evaluation's folder too
    again = system_cli("report", evaluation, "-f", "html", "-o", tmp_path / "again.html", env={})
    assert again.code == 0 and (tmp_path / "again.html").read_text() == page, again.output


def test_an_old_dataset_task_has_all_its_problems_said_at_once(tmp_path: Path, system_cli: SystemCli) -> None:
    """coder_eval's triggering.yaml, as it was: its dataset block's fields and its criterion's were said in two rounds
    (a criterion holding ${row.x} was not judged while the dataset could not be read, even for a missing field)."""
    write(tmp_path / "rows.jsonl", '{"id": "a", "prompt": "p", "skill": "x"}\n')
    task = write(
        tmp_path / "trig.yaml",
        "task_id: trig\ndescription: d\ninitial_prompt: '${row.prompt}'\n"
        "dataset:\n  path: rows.jsonl\n"
        "success_criteria:\n  - type: skill_triggered\n    description: s\n    expected: '${row.skill}'\n",
    )
    said = system_cli.invalid(task).err
    for problem in (
        ":5: dataset.path: unknown field",
        ":7: success_criteria.0.skill_name: Field required",
        ":7: success_criteria.0.expected_skill: Field required",
        ":9: success_criteria.0.expected: unknown field",
    ):
        assert problem in said, said
