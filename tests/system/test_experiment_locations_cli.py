"""Through the installed ``coder-eval``: a variant's replay trajectory is each task's own (CONTRACT 5), one missing
beside a task is said at the variant's line naming the task, and a problem the defaults cause is said at theirs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ..support.helpers import write, write_task
from .conftest import SystemCli

pytestmark = pytest.mark.slow


def _writes(text: str) -> str:
    """A trajectory whose one call writes ``text`` into x.txt."""
    return yaml.safe_dump({"turns": [{"calls": [{"tool": "Write", "path": "x.txt", "content": text}]}]})


def _replay_task(folder: Path, task_id: str) -> Path:
    return write_task(
        folder,
        {
            "task_id": task_id,
            "description": "d",
            "agent": {"type": "replay", "trajectory": "a.yaml"},
            "sandbox": {"python": None},
            "success_criteria": [{"type": "file_exists", "path": "x.txt", "description": "x"}],
        },
        f"{task_id}.yaml",
    )


def test_a_variants_trajectory_is_each_tasks_own_recorded_session(tmp_path: Path, system_cli: SystemCli) -> None:
    """CONTRACT 5 (FILE relative to the task YAML): one replay variant plays the session recorded beside each task."""
    for task_id in ("t", "u"):
        write(tmp_path / f"rp/tasks/{task_id}/a.yaml", _writes(f"{task_id}'s a"))
        write(tmp_path / f"rp/tasks/{task_id}/b.yaml", _writes(f"{task_id}'s b"))
        _replay_task(tmp_path / f"rp/tasks/{task_id}", task_id)
    write(tmp_path / "rp/exps/b.yaml", _writes("from the experiment's folder"))  # never read
    experiment = write(
        tmp_path / "rp/exps/e.yaml",
        """\
        experiment_id: e
        tasks: ["../tasks/t/t.yaml", "../tasks/u/u.yaml"]
        variants:
          - variant_id: one
          - variant_id: two
            agent: {trajectory: b.yaml}
        """,
    )
    checked = system_cli("validate", experiment, env={})
    assert (checked.code, checked.err) == (0, ""), checked.output
    outcome = system_cli("run", "-e", experiment, "--runs-dir", system_cli.runs, env={}, timeout=300)
    assert outcome.code == 0, outcome.output
    (run,) = [p for p in system_cli.runs.iterdir() if p.is_dir() and not p.is_symlink() and p.name != "tables"]
    played = {(v, t): (run / v / t / "00/sandbox/x.txt").read_text() for v in ("one", "two") for t in ("t", "u")}
    assert played == {("one", "t"): "t's a", ("one", "u"): "u's a", ("two", "t"): "t's b", ("two", "u"): "u's b"}


def test_a_variant_trajectory_missing_beside_a_task_names_the_task(tmp_path: Path, system_cli: SystemCli) -> None:
    write(tmp_path / "rp/tasks/a.yaml", _writes("a"))
    _replay_task(tmp_path / "rp/tasks", "t")
    _replay_task(tmp_path / "rp/tasks", "u")
    experiment = write(
        tmp_path / "rp/exps/e.yaml",
        """\
        experiment_id: e
        tasks: ["../tasks/t.yaml", "../tasks/u.yaml"]
        variants:
          - variant_id: one
          - variant_id: two
            agent: {trajectory: b.yaml}
        """,
    )
    done = system_cli("validate", experiment.relative_to(tmp_path), env={})
    assert done.code == 1
    assert done.err.splitlines() == [
        f"rp/exps/e.yaml:6: variants.1.agent.trajectory: file not found: b.yaml (relative to the task YAML "
        f"rp/exps/../tasks/{task_id}.yaml)"
        for task_id in ("t", "u")
    ]


def test_a_problem_of_the_defaults_is_said_in_the_experiment(tmp_path: Path, system_cli: SystemCli) -> None:
    write_task(
        tmp_path / "re",
        {
            "task_id": "steady",
            "description": "d",
            "agent": {"type": "none"},
            "sandbox": {"python": None},
            "pre_run": [{"command": "echo a > a.txt"}],
            "success_criteria": [{"type": "file_exists", "path": "a.txt", "description": "a"}],
        },
        "steady.yaml",
    )
    write(tmp_path / "ex/tA.yaml", _writes("a"))
    write(
        tmp_path / "ex/exp2.yaml",
        """\
        experiment_id: merge2
        tasks: [../re/steady.yaml]
        defaults:
          agent:
            trajectory: tA.yaml
        variants: [{variant_id: plain}]
        """,
    )
    done = system_cli("validate", "ex/exp2.yaml", env={})
    assert done.code == 1
    assert done.err.splitlines() == [
        "ex/exp2.yaml:5: defaults.agent.trajectory: only allowed with type replay, not none "
        "(under the task ex/../re/steady.yaml)"
    ]
    refused = system_cli("run", "-e", "ex/exp2.yaml", "--runs-dir", system_cli.runs, env={})
    assert refused.code == 2, refused.output
    assert "ex/exp2.yaml:5: defaults.agent.trajectory: only allowed with type replay, not none" in refused.err
