"""coder_eval's forms at run time: globs, import_check, suite metrics, the reference folder, CLI shims, node
packages, the tool-call cap (through the replay agent and agentless tasks, in-process)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.models.results import EvaluationResult
from coder_eval_dagster.core.resolution import resolve
from coder_eval_dagster.core.run_spec import RunSpec
from coder_eval_dagster.core.suite import suite_entries

from ..support.helpers import agentless_task, criterion, evaluate_replay, evaluate_task, task_with, write, write_task


def _agentless(tmp_path: Path, criteria: list[dict[str, Any]], **task: Any) -> EvaluationResult:
    return evaluate_task(tmp_path, agentless_task(success_criteria=criteria, sandbox={"python": None}, **task))


def _by_description(result: EvaluationResult) -> dict[str, Any]:
    return {c.description: c for c in result.criteria}


# ----------------------------------------------------------------------------- globs


def test_glob_paths_in_file_criteria(tmp_path: Path) -> None:
    starter = [
        {"path": "out/report-2026.txt", "content": "total: 3"},
        {"path": "logs/a.log", "content": "x"},
        {"path": "logs/b.log", "content": "y"},
        {"path": "lit[1].txt", "content": "literal"},
        {"path": "lit1.txt", "content": "the glob's match"},
        {"path": "node_modules/pkg/report.json", "content": "{}"},
    ]
    checks = [
        {**criterion("file_exists", path="out/report-*.txt"), "description": "one"},
        {**criterion("file_exists", path="logs/*.log"), "description": "several exist"},
        {**criterion("file_contains", path="out/report-*.txt", includes=["total"]), "description": "content"},
        {**criterion("file_contains", path="logs/*.log", includes=["x"]), "description": "ambiguous"},
        {**criterion("file_check", path="none/*.txt", includes=["x"]), "description": "no match"},
        {**criterion("file_contains", path="lit[1].txt", includes=["literal"]), "description": "literal wins"},
        {**criterion("file_exists", path="**/report.json"), "description": "ignored folder"},
        {**criterion("file_exists", path="node_modules/*/report.json"), "description": "spelled out"},
        {**criterion("json_check", path="node_modules/**/*.json"), "description": "json"},
    ]
    sandbox = {"python": None, "template_sources": [{"type": "starter_files", "files": starter}]}
    result = evaluate_task(tmp_path, agentless_task(success_criteria=checks, sandbox=sandbox))
    got = _by_description(result)
    assert (got["one"].score, got["one"].details["resolved"]) == (1.0, ["out/report-2026.txt"])
    assert (got["several exist"].score, got["several exist"].details["resolved"]) == (1.0, ["logs/a.log", "logs/b.log"])
    assert (got["content"].score, got["content"].details["resolved"]) == (1.0, "out/report-2026.txt")
    assert got["ambiguous"].score == 0.0
    assert (
        got["ambiguous"].error
        == "'logs/*.log' matches 2 files; refusing to guess which to grade: logs/a.log, logs/b.log"
    )
    assert got["no match"].error == "no file matches 'none/*.txt' in the sandbox"
    assert got["literal wins"].score == 1.0 and "resolved" not in got["literal wins"].details
    assert got["ignored folder"].score == 0.0 and got["spelled out"].score == 1.0
    assert got["json"].details["resolved"] == "node_modules/pkg/report.json"


def test_a_glob_cannot_leave_the_sandbox(tmp_path: Path) -> None:
    checks = [criterion("file_exists", path="../*.txt"), criterion("file_check", path="/etc/*")]
    task = write_task(tmp_path, agentless_task(success_criteria=checks))
    problems = resolve(RunSpec(task_paths=[str(task)])).problems
    assert [p.field for p in problems] == ["success_criteria.0.path", "success_criteria.1.path"]


# ----------------------------------------------------------------------------- import_check


def test_import_check_scores_the_share_of_imports_that_resolve(tmp_path: Path) -> None:
    code = "import json\nfrom os import path\nfrom . import sibling\n\ndef f():\n    import no_such_module_xyz\n"
    starter = [{"path": "main.py", "content": code}, {"path": "local_mod.py", "content": ""}]
    starter += [
        {"path": "uses_local.py", "content": "import local_mod\n"},
        {"path": "broken.py", "content": "def (:\n"},
    ]
    checks = [
        criterion("import_check", path="main.py"),
        criterion("import_check", path="uses_local.py"),
        criterion("import_check", path="broken.py"),
        criterion("import_check", path="missing.py"),
    ]
    sandbox = {"python": None, "template_sources": [{"type": "starter_files", "files": starter}]}
    main, local, broken, missing = evaluate_task(
        tmp_path, agentless_task(success_criteria=checks, sandbox=sandbox)
    ).criteria
    assert main.score == pytest.approx(2 / 3) and main.details["failed"] == ["no_such_module_xyz"]
    assert main.details["checked"] == 3  # the relative import is the package's own, not checked
    assert local.score == 1.0  # the sandbox folder is on the path, as for the code under test
    assert broken.score == 0.0 and broken.error.startswith("SyntaxError")
    assert missing.score == 0.0 and "missing.py" in missing.error


# ----------------------------------------------------------------------------- suite metrics


def test_score_metrics_and_thresholds_on_any_criterion(tmp_path: Path) -> None:
    rows = [{"id": "r1", "n": 1}, {"id": "r2", "n": 1}, {"id": "r3", "n": 0}]
    positive = criterion("run_command", command="test ${row.n} -ge 1")
    gate = {"mean": 0.5, "count": 3, "completion_rate": 0.9, "median": 1.0, "std": 0.4, "max": 1}
    task = agentless_task(
        success_criteria=[{**positive, "suite_thresholds": gate}], dataset={"rows": rows}, sandbox={"python": None}
    )
    path = write(tmp_path / "t.yaml", json.dumps(task))
    row_tasks = resolve(RunSpec(task_paths=[str(path)])).row_tasks
    from coder_eval_dagster.core.evaluation import evaluate, new_evaluation

    results = [evaluate(new_evaluation("r", tmp_path / "run", rt, 1, None)) for rt in row_tasks]
    (entry,) = suite_entries(row_tasks, results)
    assert entry.metrics == {
        "count": 3.0,
        "mean": 0.666667,
        "median": 1.0,
        "std": 0.471405,
        "min": 0.0,
        "max": 1.0,
        "completion_rate": 1.0,
    }
    assert {t.metric: t.passed for t in entry.thresholds} == {
        "mean": True,
        "count": True,
        "completion_rate": True,
        "median": True,
        "std": True,
        "max": True,
    }
    # an ERROR row never scored the criterion: it lowers the completion rate, not the statistics
    results[2].criteria = []
    (short,) = suite_entries(row_tasks, results)
    assert (short.metrics["count"], short.metrics["mean"], short.metrics["completion_rate"]) == (2.0, 1.0, 0.666667)
    assert not short.passed


# ----------------------------------------------------------------------------- the reference folder


def test_the_reference_folder_exists_only_for_the_criteria(tmp_path: Path) -> None:
    write(tmp_path / "ref/solution.py", "def add(a, b):\n    return a + b\n")
    write(tmp_path / "ref/expected.txt", "42\n")
    turns = [
        {
            "calls": [
                {
                    "tool": "Bash",
                    "command": 'echo "ref=$REFERENCE_DIR task=$TASK_DIR" > seen.txt; ls -R .. /tmp >> seen.txt',
                },
                {"tool": "Write", "path": "solution.py", "content": "def add(x, y):\n    return x + y\n"},
            ]
        }
    ]
    checks = [
        {
            **criterion("run_command", command='printf "42\\n" | diff "$REFERENCE_DIR/expected.txt" -'),
            "description": "env",
        },
        {**criterion("run_command", command="cat ${REFERENCE_DIR}/expected.txt"), "description": "token"},
        criterion("reference_comparison", agent_file="solution.py", reference_file="solution.py"),
        {
            **criterion("file_contains", path="seen.txt", excludes=["expected.txt", "traj.yaml"]),
            "description": "hidden",
        },
        {**criterion("run_command", command='cat "$TASK_DIR/ref/expected.txt"; ls $TASK_DIR'), "description": "task"},
    ]
    result = evaluate_replay(
        tmp_path, turns, reference={"directory": "ref"}, success_criteria=checks, sandbox={"python": None}
    )
    by = _by_description(result)
    assert by["env"].score == 1.0, by["env"].details
    assert by["token"].details["stdout"] == "42\n"
    assert result.criteria[2].score > 0.9
    assert by["hidden"].score == 1.0  # the agent saw no $REFERENCE_DIR, no $TASK_DIR and no copy of either folder
    assert by["task"].details["stdout"] == "42\nref\ntask.yaml\ntraj.yaml\n"  # the task's folder, its runs left out
    assert "ref= task=\n" in (tmp_path / "run/default/t/01/sandbox/seen.txt").read_text()
    assert not (tmp_path / "run/default/t/01/reference").exists()  # removed once the criteria ran
    assert not (tmp_path / "run/default/t/01/task_dir").exists()
    assert (tmp_path / "ref/expected.txt").read_text() == "42\n"


def test_judges_read_reference_files_and_the_folders_text(tmp_path: Path) -> None:
    from coder_eval_dagster.core.check_context import CheckContext
    from coder_eval_dagster.core.criteria.judging import read_judge_file
    from coder_eval_dagster.core.models.sandbox import SandboxConfig
    from coder_eval_dagster.core.models.task import Task
    from coder_eval_dagster.core.reference import reference_text, staged_reference
    from coder_eval_dagster.core.run_context import RunContext
    from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox

    write(tmp_path / "ref/a.py", "A = 1\n")
    write(tmp_path / "ref/sub/b.md", "rubric\n")
    task = Task.model_validate(agentless_task(reference={"directory": "ref"}))
    assert reference_text(task, tmp_path) == "### a.py\nA = 1\n\n\n### sub/b.md\nrubric\n"
    box = TempdirSandbox(tmp_path / "eval/sandbox", SandboxConfig(python=None))
    box.create(tmp_path)
    with staged_reference(task, tmp_path, tmp_path / "eval", box) as staged:
        assert staged is not None
        ctx = CheckContext(box, tmp_path, None, reference_dir=staged.folder, run=RunContext.create())
        assert read_judge_file("$REFERENCE_DIR/sub/b.md", ctx, 100) == "rubric\n"
        assert read_judge_file("${REFERENCE_DIR}/a.py", ctx, 100) == "A = 1\n"
        with pytest.raises(PermissionError, match="leaves the reference folder"):
            read_judge_file("$REFERENCE_DIR/../../ref/a.py", ctx, 100)


# ----------------------------------------------------------------------------- CLI shims and mock folders


def test_record_cli_shims_answer_and_record_for_the_agent_only(tmp_path: Path) -> None:
    write(tmp_path / "mocks/hello", "#!/bin/sh\necho mocked hello\n")
    sandbox = {
        "python": None,
        "template_sources": [{"type": "template_dir", "path": "mocks", "mount_point": "mocks"}],
        "mock_path_dirs": ["mocks"],
        "record_cli": [
            {
                "tool": "uip",
                "stderr": "unknown command",
                "responses": [{"when": {"verb": "ixp projects list", "flags": {"output": "json"}}, "stdout": "[]"}],
            }
        ],
    }
    turns = [
        {
            "calls": [
                {"tool": "Bash", "command": "uip ixp projects list --output json > listed.txt"},
                {"tool": "Bash", "command": "uip ixp projects delete p1"},
                {"tool": "Bash", "command": "hello > hello.txt"},
            ]
        }
    ]
    checks = [
        {**criterion("cli_called", verb_any_of=["ixp projects list", "ixp list"]), "description": "listed"},
        {
            **criterion("cli_called", verb="ixp projects delete", positional=["p1"], exact_positional=True),
            "description": "deleted p1",
        },
        {
            **criterion("cli_called", verb="ixp projects delete", positional=[], exact_positional=True),
            "description": "x",
        },
        {**criterion("run_command", command="command -v uip || echo none"), "description": "not for criteria"},
    ]
    result = evaluate_replay(
        tmp_path,
        turns,
        sandbox=sandbox,
        success_criteria=checks,
        pre_run=[{"command": "command -v uip > pre.txt; true"}],
    )
    box = tmp_path / "run/default/t/01/sandbox"
    calls = [json.loads(line) for line in (box / "cli_mocks/calls.jsonl").read_text().splitlines()]
    assert [(c["argv"], c["exit"], c.get("rule")) for c in calls] == [
        (["ixp", "projects", "list", "--output", "json"], 0, 0),
        (["ixp", "projects", "delete", "p1"], 1, None),
    ]
    assert (box / "listed.txt").read_text() == "[]" and (box / "hello.txt").read_text() == "mocked hello\n"
    statuses = [c.status for t in result.trajectory for c in t.calls]
    assert statuses == ["success", "error", "success"]  # the fallback answer's exit code 1
    by = _by_description(result)
    assert (by["listed"].score, by["deleted p1"].score, by["x"].score) == (1.0, 1.0, 0.0)
    assert by["not for criteria"].details["stdout"] == "none\n" and (box / "pre.txt").read_text() == ""


# ----------------------------------------------------------------------------- node packages


@pytest.mark.skipif(not Path("/usr/bin/npm").exists(), reason="needs npm on this machine")
def test_node_packages_are_installed_into_the_sandbox(tmp_path: Path) -> None:
    write(tmp_path / "pkg/package.json", json.dumps({"name": "local-pad", "version": "1.0.0", "main": "index.js"}))
    write(tmp_path / "pkg/index.js", "module.exports = (s) => '>' + s;\n")
    check = criterion("run_command", command="node -e \"console.log(require('local-pad')('x'))\"", expected_stdout=">x")
    assert _agentless(tmp_path / "a", [check]).final_status != "SUCCESS"  # without the package node finds none
    # a local package is installed from the sandbox (a template source): the host's folders are not in its view
    package = {"type": "template_dir", "path": str(tmp_path / "pkg"), "mount_point": "pkg"}
    sandbox = {"python": None, "template_sources": [package], "node": {"env_packages": ["./pkg"]}}
    installed = evaluate_task(tmp_path / "b", agentless_task(success_criteria=[check], sandbox=sandbox))
    assert installed.final_status == "SUCCESS", (installed.error, installed.criteria[0].details)
    broken = evaluate_task(
        tmp_path / "c",
        agentless_task(success_criteria=[check], sandbox={"python": None, "node": {"env_packages": ["./nowhere"]}}),
    )
    assert broken.final_status == "ERROR" and "installing node packages failed" in broken.error
    assert "A complete log of this run" not in broken.error  # its file is in the sandbox's /tmp, gone by now


# ----------------------------------------------------------------------------- run_limits.max_tool_calls


def test_the_tool_call_cap_refuses_the_call_past_it_and_ends_the_run(tmp_path: Path) -> None:
    calls = [{"tool": "Bash", "command": f"echo {i} >> log.txt"} for i in range(5)]
    result = evaluate_replay(
        tmp_path,
        [{"calls": calls[:2]}, {"calls": calls[2:]}],
        run_limits={"max_tool_calls": 3},
        success_criteria=[criterion("file_contains", path="log.txt", includes=["2"])],
        sandbox={"python": None},
    )
    assert (tmp_path / "run/default/t/01/sandbox/log.txt").read_text().split() == ["0", "1", "2"]
    assert result.final_status == "SUCCESS"  # the criteria grade what the agent left
    assert result.warnings == ["run_limits.max_tool_calls (3) reached: the agent was stopped there"]
    exact = evaluate_replay(
        tmp_path / "exact",
        [{"calls": calls[:3]}],
        run_limits={"max_tool_calls": 3},
        success_criteria=[criterion("file_exists", path="log.txt")],
        sandbox={"python": None},
    )
    assert exact.warnings == []  # exactly the cap: nothing was refused


# ----------------------------------------------------------------------------- simulation.model


def test_the_simulated_users_model_is_pinned_by_simulation_model() -> None:
    from coder_eval_dagster.core.models.task import Task
    from coder_eval_dagster.core.run_context import RunContext
    from coder_eval_dagster.core.simulation import ModelUser, simulated_user

    dialog = {"enabled": True, "persona": "p", "goal": "g"}
    agent = {"type": "claude-code", "model": "agent-model"}

    def model_of(simulation: dict[str, Any]) -> str:
        user = simulated_user(
            Task.model_validate(task_with(agent=agent, simulation=simulation)), None, RunContext.create()
        )
        assert isinstance(user, ModelUser)
        return user.model

    assert model_of(dialog) == "claude-sonnet-4-6"  # the judges' default as served, never the agent's model
    assert model_of({**dialog, "model": "claude-haiku-4-5"}) == "claude-haiku-4-5"
