"""ATIF round trip through the installed `coder-eval`: run, export each trajectory, replay the exported file, and
the criteria say the same; a recorded Claude Code session (an ATIF file) replays as a task's agent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from coder_eval_dagster.core.layout import load_result
from coder_eval_dagster.core.models.atif import Trajectory as AtifTrajectory

from ..support.helpers import write_task
from .conftest import RunFolder, SystemCli, only_run, replay_task_file

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data" / "atif"
TURNS: list[dict[str, Any]] = [
    {
        "usage": {"input_tokens": 1200, "output_tokens": 300, "cache_read_input_tokens": 800, "cost_usd": 0.01},
        "calls": [
            {"tool": "Write", "path": "app.py", "content": "print('helo')\n"},
            {"tool": "Bash", "command": "python3 app.py"},
            {"tool": "Read", "path": "missing.txt"},
        ],
        "text": "app.py prints a greeting, with a typo.",
    },
    {
        "usage": {"input_tokens": 400, "output_tokens": 90, "cache_creation_input_tokens": 50, "cost_usd": 0.004},
        "calls": [
            {"tool": "Edit", "path": "app.py", "old": "helo", "new": "hello"},
            {"tool": "Bash", "command": "python3 app.py > out.txt && cat out.txt"},
        ],
        "text": "Fixed: it prints hello.",
    },
]
CRITERIA = [
    {"type": "file_exists", "path": "out.txt", "description": "out.txt exists"},
    {"type": "file_contains", "path": "app.py", "includes": ["hello"], "description": "the typo is fixed"},
    {"type": "run_command", "command": "python3 app.py", "expected_stdout": "hello", "description": "it prints hello"},
    {"type": "command_executed", "tool_name": "Bash", "min_count": 2, "description": "it ran its code twice"},
    {"type": "command_executed", "tool_name": "Read", "require_success": True, "description": "every read worked"},
    {"type": "commands_efficiency", "expected_commands": 4, "description": "about four calls"},
]

USAGE = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cost_usd")


def outcome(run: RunFolder, task_id: str) -> dict[str, Any]:
    """What the round trip must keep: each criterion's verdict, the status, the calls and the usage (task.json read
    as the product reads it)."""
    result = load_result(run.evaluation(task_id) / "task.json")
    return {
        "status": result.final_status,
        "criteria": [(c.type, c.passed, c.score) for c in result.criteria],
        "calls": [(c.tool, c.parameters, c.status, c.output) for turn in result.trajectory for c in turn.calls],
        "usage": [turn.model_dump(include=set(USAGE)) for turn in result.trajectory],
        "texts": [turn.text for turn in result.trajectory],
    }


def said(run: RunFolder, task_id: str) -> list[tuple[int, str, str, bool | None]]:
    """A dialog's messages: who said what at which exchange, and the check after it (not when: timestamps differ)."""
    dialog = load_result(run.evaluation(task_id) / "task.json").dialog
    return [(message.turn, message.role, message.text, message.criteria_passed) for message in dialog]


def replayed_from(system_cli: SystemCli, task: Path, exported: Path) -> RunFolder:
    """``task`` again, its agent playing the exported ATIF file, into a runs folder of its own."""
    data = yaml.safe_load(task.read_text(encoding="utf-8"))
    data["agent"]["trajectory"] = str(exported)
    again = write_task(task.parent, data, f"{data['task_id']}.from-atif.yaml")
    runs = system_cli.folder / "runs-from-atif"
    system_cli("run", again, "--runs-dir", runs, env={})
    return only_run(runs)


def test_export_then_replay_gives_the_same_criteria_results(system_cli: SystemCli) -> None:
    task = replay_task_file(system_cli.folder / "tasks", "greeter", TURNS, success_criteria=CRITERIA)
    first, run = system_cli.run(task, env={})
    assert first.code == 1, first.output  # "every read worked" fails: missing.txt
    exported = system_cli("export", run.path, "--format", "atif", "--out", system_cli.folder / "atif", env={})
    assert exported.code == 0 and "wrote 1 ATIF trajectories" in exported.out, exported.output
    atif_file = system_cli.folder / "atif" / "default" / "greeter" / "00" / "trajectory.atif.json"
    document = AtifTrajectory.model_validate_json(atif_file.read_text(encoding="utf-8"))
    assert document.schema_version == "ATIF-v1.7"
    assert [step.source for step in document.steps] == ["user", "agent", "agent"]
    assert document.steps[0].text == "p"  # the task's prompt opens it
    observed = document.steps[2].observation
    assert observed is not None and observed.results[1].content == "hello"  # what the call returned (as the Bash tool)
    assert not list(run.path.rglob("trajectory.atif.json")), "--out DIR writes there, not into the run"

    second = replayed_from(system_cli, task, atif_file)
    assert second.path.parent != run.path.parent
    assert outcome(second, "greeter") == outcome(run, "greeter")


def test_a_dialog_round_trips_with_its_user_messages(system_cli: SystemCli) -> None:
    """The shipped replayed dialog: exported (user messages between exchanges) and replayed, the same dialog."""
    tasks = system_cli.folder / "tasks"
    shutil.copytree(ROOT / "tasks" / "replay_dialog", tasks)
    first, run = system_cli.run(tasks / "task.yaml", env={})
    assert first.code == 0, first.output
    exported = system_cli("export", run.path, "--format", "atif", env={})
    assert exported.code == 0, exported.output
    atif_file = run.evaluation("replay_dialog") / "trajectory.atif.json"  # default: beside task.json
    sources = [step["source"] for step in json.loads(atif_file.read_text(encoding="utf-8"))["steps"]]
    assert sources == ["user", "agent", "user", "agent"]
    second = replayed_from(system_cli, tasks / "task.yaml", atif_file)
    assert outcome(second, "replay_dialog") == outcome(run, "replay_dialog")
    assert said(second, "replay_dialog") == said(run, "replay_dialog")


def test_a_recorded_claude_code_session_replays(system_cli: SystemCli) -> None:
    tasks = system_cli.folder / "tasks"
    tasks.mkdir()
    shutil.copy(DATA / "claude_code_session.json", tasks / "session.json")
    task = write_task(
        tasks,
        {
            "task_id": "hello",
            "description": "a Claude Code session recorded by Harbor, replayed",
            "initial_prompt": 'Create a file called hello.txt with "Hello, world!" as the content.',
            "sandbox": {"python": None},
            "agent": {"type": "replay", "trajectory": "session.json"},
            "success_criteria": [
                {"type": "file_contains", "path": "hello.txt", "includes": ["Hello, world!"], "description": "hello"},
                {"type": "command_executed", "tool_name": "Edit", "require_success": True, "description": "edited"},
            ],
        },
    )
    done, run = system_cli.run(task, env={})
    assert done.code == 0, done.output
    assert (run.evaluation("hello") / "sandbox" / "hello.txt").read_text() == "Hello, world!\n"


def test_a_dataset_runs_exports_replay_one_file_per_row(system_cli: SystemCli) -> None:
    """`export` writes a dataset run's trajectories one file per row: a task replays them with the row's id in the
    file's name (`trajectory: .../${row.id}/00/trajectory.atif.json`), each row its own, and a row whose file is
    missing is refused at load, naming the field and the row."""
    tasks = system_cli.folder / "tasks"
    answers = [{"tool": "Write", "path": "answer.txt", "content": "${row.answer}"}]
    rows = {"rows": [{"id": "r1", "answer": "yes"}, {"id": "r2", "answer": "no"}]}
    says_yes = [{"type": "file_contains", "path": "answer.txt", "includes": ["yes"], "description": "says yes"}]
    task = replay_task_file(tasks, "labels", [{"calls": answers}], dataset=rows, success_criteria=says_yes)
    first, run = system_cli.run(task, env={})
    assert first.code == 1, first.output  # r2 says no
    exported = system_cli("export", run.path, "--format", "atif", "--out", system_cli.folder / "atif", env={})
    assert exported.code == 0 and "wrote 2 ATIF trajectories" in exported.out, exported.output

    per_row = system_cli.folder / "atif" / "default" / "labels" / "${row.id}" / "00" / "trajectory.atif.json"
    second = replayed_from(system_cli, task, per_row)
    for row in ("labels/r1", "labels/r2"):
        assert outcome(second, row) == outcome(run, row)
    assert (second.evaluation("labels/r2") / "sandbox" / "answer.txt").read_text() == "no"

    exported_rows = system_cli.folder / "atif" / "default" / "labels"
    shutil.rmtree(exported_rows / "r1")  # the first row's: read before the others, said the same way
    refused = system_cli.invalid(tasks / "labels.from-atif.yaml")
    (said,) = refused.err.splitlines()  # r2's file is there
    assert said.startswith(f"{tasks / 'labels.from-atif.yaml'}:"), refused.output
    assert "agent.trajectory: cannot read" in said and "(row 'r1' at" in said, refused.output

    shutil.copytree(exported_rows / "r2", exported_rows / "r1")  # r1 has a file again
    (exported_rows / "r2" / "00" / "trajectory.atif.json").write_text("{}")  # neither ATIF nor ours: no turns
    refused = system_cli.invalid(tasks / "labels.from-atif.yaml")
    assert refused.err.startswith(str(exported_rows / "r2" / "00" / "trajectory.atif.json")), refused.output
    assert "(row 'r2' at" in refused.err, refused.output
