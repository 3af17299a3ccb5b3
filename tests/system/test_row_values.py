"""Row values through the installed ``coder-eval``: shell-quoted only in the commands coder_eval does not fill
(pre_run, post_run, replayed Bash calls), and refused at load where no such command can carry them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..support.helpers import write
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow

CALLS = '{"tool": "uip", "argv": ["run", "--command=deploy prod"]}'


def test_a_flag_or_value_named_command_is_not_shell_quoted(tmp_path: Path, system_cli: SystemCli) -> None:
    """Only a hook's and a replayed Bash call's ``command`` is shell-quoted (a run_command's takes the value as
    written, as coder_eval's): a cli_called flag named ``command`` compared the row's text with quotes around it
    and scored 0."""
    write(tmp_path / "tasks/rows.jsonl", json.dumps({"id": "r1", "c": "deploy prod"}) + "\n")
    task_file(
        tmp_path / "tasks",
        "flags",
        agent={"type": "none"},
        dataset={"paths": ["rows.jsonl"]},
        pre_run=[{"command": f"printf '%s\\n' '{CALLS}' > calls.jsonl"}],
        success_criteria=[
            {
                "type": "cli_called",
                "log": "calls.jsonl",
                "tool": "uip",
                "verb": "run",
                "flags": {"command": "${row.c}"},
                "description": "flag",
            },
            {"type": "run_command", "command": 'test "$(echo ${row.c})" = "deploy prod"', "description": "shell"},
        ],
    )
    outcome, run = system_cli.run(tmp_path / "tasks", env={})
    assert outcome.code == 0, outcome.output
    (result,) = run.summary["task_results"]
    assert result["success"] is True, result


@pytest.mark.parametrize(
    ("command", "value", "refused"),
    [
        # a "]]" in quotes does not end the test: the -eq after it reads the value as arithmetic, where a[$(cmd)]
        # runs cmd, quoted or not
        ('[[ "]]" != x && ${row.x} -eq 1 ]]', "a[$(touch PWNED)]", "with an arithmetic test"),
        ("printf '%s' ${row.x} > x.txt", "hello world", None),
        ("printf '%s' ${row.x} > x.txt", "a\u0000b", "it holds a NUL character"),
    ],
)
def test_a_value_is_refused_at_load_exactly_where_no_quoting_keeps_it_data(
    tmp_path: Path, system_cli: SystemCli, command: str, value: str, refused: str | None
) -> None:
    write(tmp_path / "tasks/rows.jsonl", "\n" + json.dumps({"id": "r1", "x": value}) + "\n")
    task = task_file(
        tmp_path / "tasks",
        "values",
        agent={"type": "none"},
        dataset={"paths": ["rows.jsonl"]},
        pre_run=[{"command": command}],
    )
    validated = system_cli("validate", task, env={})
    if refused is None:
        assert validated.code == 0, validated.output
    else:
        assert validated.code == 1 and "Traceback" not in validated.output, validated.output
        assert validated.output.startswith(f"{tmp_path / 'tasks/rows.jsonl'}:2: x: row 'r1': "), validated.output
        assert refused in validated.output


def test_a_rescore_reads_the_runs_paths_from_where_it_was_started(tmp_path: Path, system_cli: SystemCli) -> None:
    """The plan keeps the task paths as given (``tasks``) and the base layer is the run folder's
    experiments/default.yaml: a rescore from another folder found no ``tasks`` (exit 2), and one whose task folder
    was moved away since could not rescore at all."""
    task_file(tmp_path / "tasks", "t", agent={"type": "none"})
    write(tmp_path / "experiments/default.yaml", "experiment_id: base\nvariants:\n  - variant_id: base\n")
    outcome, run = system_cli.run(Path("tasks"), env={})
    assert outcome.code == 0 and [t["variant_id"] for t in run.summary["task_results"]] == ["base"], outcome.output
    elsewhere = SystemCli(tmp_path / "elsewhere")
    elsewhere.folder.mkdir()
    elsewhere.home = system_cli.home

    rescored = elsewhere("rescore", run.path, env={})
    assert rescored.code == 0 and "no longer in the task files" not in rescored.err, rescored.output
    # a run folder from another machine (or checkout): its folder is not here; read from the current one
    plan = json.loads((run.path / "run_plan.json").read_text())
    (run.path / "run_plan.json").write_text(json.dumps(plan | {"started_in": "/no/such/checkout"}))
    rescored = system_cli("rescore", run.path, env={})
    assert rescored.code == 0 and "no longer in the task files" not in rescored.err, rescored.output
    (tmp_path / "tasks").rename(tmp_path / "moved")
    rescored = elsewhere("rescore", run.path, env={})
    assert rescored.code == 0, rescored.output
    assert "1 evaluated row-task(s) no longer in the task files, scored with the criteria the run had" in rescored.err
    assert rescored.err.count("(gone since the run: ") == 1 and "tasks)" in rescored.err, rescored.err


def test_a_rescore_refuses_a_damaged_task_json_as_bad_input(tmp_path: Path, system_cli: SystemCli) -> None:
    """Found by the scoring step, a task.json cut short failed the rescore as a run that did not complete (exit 1,
    with the error's class name); report and compare refuse it with exit 2, as bad input."""
    task = task_file(tmp_path / "tasks", "cut", agent={"type": "none"})
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    result = run.evaluation("cut") / "task.json"
    result.write_text(result.read_text()[:300])
    rescored = system_cli("rescore", run.path, env={})
    assert rescored.code == 2 and "Traceback" not in rescored.output, rescored.output
    assert rescored.err.startswith("not JSON") and str(result) in rescored.err, rescored.err
    assert "InvalidInput" not in rescored.err


def test_a_suites_rows_are_in_dataset_order(tmp_path: Path, system_cli: SystemCli) -> None:
    """coder_eval lists a suite's rows as its dataset does: its first row labels a criterion's aggregate (it was the
    first id in sort order, "007" before "1", here a row whose value is blank)."""
    rows = [{"id": "1", "answer": "x,y"}, {"id": "007", "answer": ""}, {"id": "r4", "answer": "z"}]
    write(tmp_path / "tasks/rows.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    check = {"type": "run_command", "description": "nonempty ${row.answer}", "command": 'test -n "${row.answer}"'}
    task_file(
        tmp_path / "tasks", "ds", agent={"type": "none"}, dataset={"paths": ["rows.jsonl"]}, success_criteria=[check]
    )
    outcome, run = system_cli.run(tmp_path / "tasks", env={})
    assert outcome.code == 1, outcome.output
    suite = json.loads((run.path / "default" / "ds" / "suite.json").read_text())
    assert suite["criterion_aggregates"][0]["description"] == "nonempty x,y"
    assert [sample["task_id"] for sample in suite["failed_samples"]] == ["ds/007"]


def test_a_suite_whose_rows_all_errored_fails_its_gates_in_suite_json(tmp_path: Path, system_cli: SystemCli) -> None:
    """Every row an ERROR: the run and run.json failed the suite's thresholds, but suite.json, built from the
    criteria the rows ran (none), had no aggregate and said ``passed: true`` (coder_eval's says false)."""
    gated = {"type": "file_exists", "path": "a.txt", "description": "w", "suite_thresholds": {"count": 2, "mean": 0.5}}
    task = task_file(
        tmp_path / "tasks",
        "allerr",
        agent={"type": "none"},
        dataset={"rows": [{"id": "a"}, {"id": "b"}]},
        pre_run=[{"command": "exit 1"}],
        success_criteria=[gated],
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 1, outcome.output
    suite = json.loads((run.path / "default" / "allerr" / "suite.json").read_text())
    (aggregate,) = suite["criterion_aggregates"]
    assert [check["passed"] for check in aggregate["threshold_checks"]] == [False, False]
    assert (aggregate["criterion_type"], aggregate["description"]) == ("file_exists", "w") and aggregate["error"]
    assert suite["passed"] is False


def test_criterion_stats_count_results_as_coder_eval_does(tmp_path: Path, system_cli: SystemCli) -> None:
    """suite.json's ``criterion_stats[].rows_evaluated`` is coder_eval's count of results (two run_command criteria
    over two rows: 4); ours counted rows (2), and a script written for its suite.json read another number."""
    checks = [{"type": "run_command", "command": "true", "description": f"check {n}"} for n in (1, 2)]
    task = task_file(
        tmp_path / "tasks",
        "two",
        agent={"type": "none"},
        dataset={"rows": [{"id": "a"}, {"id": "b"}]},
        success_criteria=checks,
    )
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 0, outcome.output
    suite = json.loads((run.path / "default" / "two" / "suite.json").read_text())
    assert [(s["criterion_type"], s["rows_evaluated"]) for s in suite["criterion_stats"]] == [("run_command", 4)]


def test_a_variant_whose_rows_all_errored_is_in_pass_at_k(tmp_path: Path, system_cli: SystemCli) -> None:
    """run.json's pass_at_k and pass_hat_k left such a variant out: a reader indexing them by variant failed."""
    task = task_file(tmp_path / "tasks", "ab", agent={"type": "none"}, dataset={"rows": [{"id": "a"}, {"id": "b"}]})
    broken = {"python": {"env_packages": ["./nowhere"]}}  # its sandbox cannot be made: every row an ERROR
    experiment = write(
        tmp_path / "ab.yaml",
        json.dumps(
            {"experiment_id": "ab", "variants": [{"variant_id": "good"}, {"variant_id": "bad", "sandbox": broken}]}
        ),
    )
    outcome, run = system_cli.run(task, "-e", str(experiment), env={})
    assert outcome.code == 1, outcome.output
    assert run.summary["pass_at_k"] == {"good": {"1": 1.0}, "bad": {}}
    assert run.summary["pass_hat_k"] == {"good": {"1": 1.0}, "bad": {}}
    assert "## Repeated trials" not in (run.path / "run.md").read_text()  # one replicate each: nothing to show
