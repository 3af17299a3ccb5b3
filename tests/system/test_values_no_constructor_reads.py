"""Values YAML or JSON cannot turn into Python values, through the installed CLI: `!!int "abc"`, `!!bool maybe`,
a 4,301-digit integer... stopped `validate` with an internal error (exit 3) and the other files went unchecked; a
dataset row's lone surrogate (`"\\ud800"`) passed `validate` and `run` then failed writing its fingerprint. Each is
now a problem at its file and line (exit 1), and the other files are still checked."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import SystemCli, task_file

pytestmark = pytest.mark.slow

HUGE = "9" * 4301  # one digit past Python's limit for reading an integer from text
TASK = "task_id: bad\ndescription: d\nagent: {type: none}\nsandbox: {python: null}\n"
CRITERIA = "success_criteria:\n  - {type: file_exists, path: x, description: d}\n"
ATIF = (
    '{"schema_version": "ATIF-v1.6", "session_id": "s", "agent": {"name": "a", "version": "1"}, "steps": [\n'
    '{"step_id": ' + HUGE + ', "source": "agent", "message": "m"}]}\n'
)


def _bad_task(folder: Path, field: str, value: str) -> Path:
    """A task whose ``field`` (on line 2) holds ``value``, written as is."""
    path = folder / "bad.yaml"
    path.write_text(TASK.replace("description: d", f"{field}: {value}") + CRITERIA, encoding="utf-8")
    return path


def _replay_task(folder: Path) -> Path:
    """A replay task whose ATIF trajectory's step_id (on line 2 of traj.json) has 4,301 digits."""
    (folder / "traj.json").write_text(ATIF, encoding="utf-8")
    path = folder / "bad.yaml"
    path.write_text(TASK.replace("{type: none}", "{type: replay, trajectory: traj.json}") + CRITERIA, encoding="utf-8")
    return path


def _dataset_task(folder: Path, row: str) -> Path:
    """A task over data.jsonl whose second row is ``row``."""
    (folder / "data.jsonl").write_text('{"id": "fine", "x": "y"}\n' + row + "\n", encoding="utf-8")
    path = folder / "bad.yaml"
    path.write_text(TASK + "dataset: {paths: [data.jsonl]}\n" + CRITERIA, encoding="utf-8")
    return path


CASES: dict[str, Callable[[Path], tuple[Path, str]]] = {
    "int_tag": lambda folder: (_bad_task(folder, "description", '!!int "abc"'), "bad.yaml:2:"),
    "bool_tag": lambda folder: (_bad_task(folder, "description", "!!bool maybe"), "bad.yaml:2:"),
    "timestamp_tag": lambda folder: (_bad_task(folder, "description", "!!timestamp 2024-13-45"), "bad.yaml:2:"),
    "float_tag": lambda folder: (_bad_task(folder, "description", '!!float "x"'), "bad.yaml:2:"),
    "huge_int": lambda folder: (_bad_task(folder, "skip", HUGE), "bad.yaml:2:"),
    "atif_huge_step_id": lambda folder: (_replay_task(folder), "traj.json:2:"),
    "row_huge_int": lambda folder: (_dataset_task(folder, '{"id": "a", "x": ' + HUGE + "}"), "data.jsonl:2:"),
    "row_lone_surrogate": lambda folder: (_dataset_task(folder, '{"id": "a", "x": "\\ud800"}'), "data.jsonl:2:"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_value_that_cannot_be_read_is_a_problem_at_its_line(system_cli: SystemCli, case: str) -> None:
    system_cli.folder.mkdir(exist_ok=True)
    bad, where = CASES[case](system_cli.folder)
    ok = task_file(system_cli.folder / "ok", "ok", agent={"type": "none"}, surprise=1)
    outcome = system_cli("validate", bad, ok, env={})
    assert outcome.code == 1, outcome.output
    assert any(line.startswith(str(system_cli.folder / where)) for line in outcome.err.splitlines()), outcome.output
    assert any(line.startswith(f"{ok}:") and "surprise" in line for line in outcome.err.splitlines()), outcome.output
    assert "internal error" not in outcome.output and "Traceback" not in outcome.output


@pytest.mark.parametrize("value", ["!!int abc", "!!bool maybe", HUGE])
def test_an_override_that_cannot_be_read_is_refused(system_cli: SystemCli, value: str) -> None:
    task = task_file(system_cli.folder / "tasks", "t", agent={"type": "none"})
    outcome = system_cli("run", task, "--runs-dir", system_cli.runs, "-D", f"run_limits.max_turns={value}", env={})
    assert outcome.code == 2, outcome.output
    assert "run_limits.max_turns" in outcome.err, outcome.output
    assert "internal error" not in outcome.output and "Traceback" not in outcome.output
