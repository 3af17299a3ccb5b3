"""What a user coming from coder_eval types, through the installed ``coder-eval``.

A suite whose rows all ended as ERROR measured no score: the released
coder_eval's suite.json then holds ``completion_rate`` alone and fails a
threshold on any other metric; our ``report``, ``report --rebuild`` and
``aggregate`` read such a run folder (they stopped on ``KeyError: 'mean'``),
and our own run of the task gates as the release's does (its mean read 0.0
and met a minimum of 0). ``-e NAME`` is looked for as the release looks
(``experiments/NAME.yaml``, ``.yml``, then ``experiments/NAME``), and its
error lists the experiments there. The release's ``evaluate`` options are
accepted when they ask for what we do, and refused in one line otherwise.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ..support.helpers import write
from . import test_coder_eval_oracle as release
from .conftest import SystemCli, task_file

pytestmark = pytest.mark.xdist_group("coder-eval-oracle")  # one worker: the install runs once
oracle = release.oracle  # the released coder-eval, installed by its script (a skip without Python 3.13)


def all_error_task(folder: Path, thresholds: dict[str, float]) -> Path:
    """Two dataset rows whose pre_run fails: each row an ERROR, its criterion never run."""
    criterion = {"type": "run_command", "description": "runs true", "command": "true", "suite_thresholds": thresholds}
    return task_file(
        folder / "tasks",
        "allerr",
        agent={"type": "none"},
        dataset={"rows": [{"id": "a"}, {"id": "b"}]},
        pre_run=[{"command": "exit 3"}],
        success_criteria=[criterion],
    )


def suite_of(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "default" / "allerr" / "suite.json").read_text())


def checks(suite: dict[str, Any]) -> list[tuple[str, bool]]:
    (aggregate,) = suite["criterion_aggregates"]
    return [(check["metric"], check["passed"]) for check in aggregate["threshold_checks"]]


def test_report_rebuild_and_aggregate_read_a_release_run_no_row_of_which_was_measured(
    oracle: Path, system_cli: SystemCli
) -> None:
    task = all_error_task(system_cli.folder, {"mean": 0.5})
    made = release.run_oracle(oracle, system_cli, "run", task, "--run-dir", "old")
    assert made.returncode == 1, made.stdout + made.stderr  # its suite gate failed
    old = system_cli.folder / "old"
    assert suite_of(old)["criterion_aggregates"][0]["metrics"] == {"completion_rate": 0.0}
    unmeasured = "- allerr [default] criterion 0 (run_command): mean not measured, completion_rate 0.000"
    shown = system_cli("report", old, env={})
    assert shown.code == 0, shown.output  # before: exit 3, internal error: KeyError: 'mean'
    assert unmeasured in shown.out and "  - mean not measured >= 0.5: NOT met" in shown.out, shown.out
    for command in (("report", "--rebuild"), ("aggregate",)):
        copy = system_cli.folder / command[0] / "old"
        shutil.copytree(old, copy)
        rebuilt = system_cli(command[0], copy, *command[1:], env={})
        assert rebuilt.code == 0, rebuilt.output
        assert unmeasured in (copy / "run.md").read_text()
        assert json.loads((copy / "run.json").read_text())["tasks_error"] == 2


def test_a_metric_no_row_measured_fails_its_threshold_as_the_release(oracle: Path, system_cli: SystemCli) -> None:
    """completion_rate is measured over every row (0 of 2 scored: 0.0, which meets 0); the mean of no score is not
    measured and fails even a minimum of 0, and so does the suite."""
    task = all_error_task(system_cli.folder, {"mean": 0.0, "completion_rate": 0.0})
    made = release.run_oracle(oracle, system_cli, "run", task, "--run-dir", "old")
    assert made.returncode == 1, made.stdout + made.stderr
    theirs = suite_of(system_cli.folder / "old")
    assert checks(theirs) == [("mean", False), ("completion_rate", True)] and theirs["passed"] is False
    outcome, run = system_cli.run(task, env={})
    assert outcome.code == 1, outcome.output  # before: the run failed on its ERROR rows only
    ours = suite_of(run.path)
    assert checks(ours) == checks(theirs)  # before: mean 0 >= 0: met
    assert ours["passed"] is False and run.summary["passed"] is False
    (aggregate,) = ours["criterion_aggregates"]
    assert aggregate["metrics"] == theirs["criterion_aggregates"][0]["metrics"] == {"completion_rate": 0.0}
    assert [entry["thresholds"][0]["passed"] for entry in run.summary["suite"]] == [False]
    shown = system_cli("report", run.path, env={})
    assert shown.code == 0 and "  - mean not measured >= 0: NOT met" in shown.out, shown.output
    assert "  - completion_rate 0 >= 0: met" in shown.out


def test_an_experiment_is_looked_for_as_the_release_looks(system_cli: SystemCli) -> None:
    task = task_file(system_cli.folder / "tasks", "t", agent={"type": "none"})
    for name, variant in (("plugin-comparison.yaml", "plug"), ("both.yaml", "from-yaml"), ("both.yml", "from-yml")):
        write(system_cli.folder / "experiments" / name, f"experiment_id: e\nvariants:\n  - variant_id: {variant}\n")
    base_layer = "experiment_id: default\nvariants: [{variant_id: base}]\n"  # under every run; not an -e name
    write(system_cli.folder / "experiments/default.yaml", base_layer)
    for given, variant in (("plugin-comparison.yaml", "plug"), ("both", "from-yaml"), ("both.yml", "from-yml")):
        listed = system_cli("list", task, "-e", given, env={})
        assert (listed.code, listed.out.split()) == (0, [variant, "t"]), listed.output  # before: no such file
    missing = system_cli("run", task, "-e", "nope", "--runs-dir", system_cli.runs, env={})
    assert missing.code == 2 and missing.err.strip() == (
        "no such experiment file (nor experiments/nope.yaml, experiments/nope.yml or experiments/nope; "
        "experiments here: both, plugin-comparison): nope"
    )
    as_file = system_cli("validate", task, "-e", "nope.yaml", env={})
    assert as_file.code == 1 and as_file.err.strip() == (
        "no such experiment file (nor experiments/nope.yaml; experiments here: both, plugin-comparison): nope.yaml"
    )


@pytest.mark.parametrize("options", [("-p",), ("--preserve",), ("--allow-recorded-commands",)])
def test_evaluate_takes_the_release_options_that_ask_for_what_it_does(
    system_cli: SystemCli, options: tuple[str, ...]
) -> None:
    task = task_file(system_cli.folder, "graded", agent={"type": "none"}, pre_run=[])
    write(system_cli.folder / "work/a.txt", "a\n")
    outcome = system_cli("evaluate", task, "work", "--run-dir", "graded-run", *options, env={})
    assert outcome.code == 0, outcome.output  # before: unrecognized arguments
    assert (system_cli.folder / "graded-run/sandbox/a.txt").is_file()  # preserved, as -p asks


@pytest.mark.parametrize(
    ("options", "flag"),
    [
        (("-P",), "-P/--no-preserve"),
        (("--no-preserve",), "-P/--no-preserve"),
        (("--workspace", "work"), "--workspace"),
        (("--allow-host-grading",), "--allow-host-grading"),
        (("--format", "harbor", "--trajectory", "t.json"), "--format/--trajectory"),
    ],
)
def test_evaluate_refuses_the_release_options_it_cannot_honour_in_one_line(
    system_cli: SystemCli, options: tuple[str, ...], flag: str
) -> None:
    task = task_file(system_cli.folder, "graded", agent={"type": "none"}, pre_run=[])
    (system_cli.folder / "work").mkdir()
    outcome = system_cli("evaluate", task, "work", *options, env={})
    assert outcome.code == 2 and outcome.out == "", outcome.output
    (line,) = outcome.err.splitlines()  # before: unrecognized arguments, naming no reason
    assert line.startswith(f"coder-eval evaluate: argument {flag}: not supported: "), line
    assert not (system_cli.folder / "runs").exists()
