"""Small helpers shared by the tests: write YAML, run the CLI in-process."""

from __future__ import annotations

import io
import textwrap
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from coder_eval_dagster.cli import main

MINIMAL_TASK: dict[str, Any] = {
    "task_id": "t1",
    "description": "a task",
    "initial_prompt": "do it",
    "success_criteria": [{"type": "file_exists", "path": "a.txt", "description": "a exists"}],
}


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(*args: str | Path) -> CliResult:
    """The CLI in this process; an argument refused by the parser exits (2) as the console script does."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
    return CliResult(code, out.getvalue(), err.getvalue())


def run_folders(runs: Path) -> list[Path]:
    """The run folders under a runs folder, oldest first (not tables/, a hidden cache or the ``latest`` link)."""
    return sorted(
        p for p in runs.iterdir() if p.is_dir() and not p.is_symlink() and p.name != "tables" and p.name[0] != "."
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def write_task(folder: Path, data: dict[str, Any], name: str = "task.yaml") -> Path:
    return write(folder / name, yaml.safe_dump(data, sort_keys=False))


def task_with(**changes: Any) -> dict[str, Any]:
    """MINIMAL_TASK with top-level keys replaced (None deletes a key)."""
    data = {**MINIMAL_TASK, **changes}
    return {k: v for k, v in data.items() if v is not None}


def criterion(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "description": f"a {kind} check", **fields}


def evaluate_task(folder: Path, data: dict[str, Any], context: Any = None):
    """Write a task file into ``folder`` and evaluate its single row-task (core only, no Dagster), in ``context``
    (a RunContext; by default one of its own)."""
    from coder_eval_dagster.core.evaluation import evaluate, new_evaluation
    from coder_eval_dagster.core.resolution import resolve
    from coder_eval_dagster.core.run_spec import RunSpec

    (row_task,) = resolve(RunSpec(task_paths=[str(write_task(folder, data))])).row_tasks
    return evaluate(new_evaluation("r", folder / "run", row_task, 1, None, context))


def replay_task(**task: Any) -> dict[str, Any]:
    """A replay task playing ``traj.yaml`` beside it, with ``task``'s keys laid over."""
    return {
        "task_id": "t",
        "description": "d",
        "initial_prompt": "p",
        "sandbox": {"python": None},
        "agent": {"type": "replay", "trajectory": "traj.yaml"},
        **task,
    }


def evaluate_replay(folder: Path, turns: list[dict[str, Any]], context: Any = None, **task: Any):
    """Evaluate a replay task whose trajectory is ``turns``."""
    write(folder / "traj.yaml", yaml.safe_dump({"turns": turns}))
    return evaluate_task(folder, replay_task(**task), context)


def write_replay_task(folder: Path, task_id: str, commands: list[str], pre_run: list[str], **task: Any) -> Path:
    """A replay task file whose one turn runs ``commands`` as Bash calls, after ``pre_run``."""
    calls = [{"tool": "Bash", "command": command} for command in commands]
    write(folder / "traj.yaml", yaml.safe_dump({"turns": [{"calls": calls}]}))
    data = replay_task(
        task_id=task_id, description=task_id, pre_run=[{"command": command} for command in pre_run], **task
    )
    return write_task(folder, data)


def evaluate_claude_code(tmp_path: Path, criteria: list[dict] | None = None, **task: Any) -> Any:
    """A claude-code task (bypassPermissions, model claude-test, out.txt expected), evaluated in-process."""
    data = {
        "task_id": "t",
        "description": "d",
        "initial_prompt": "do the task",
        "sandbox": {"python": None},
        "agent": {"type": "claude-code", "permission_mode": "bypassPermissions", "model": "claude-test"},
        "success_criteria": criteria or [criterion("file_exists", path="out.txt")],
        **task,
    }
    return evaluate_task(tmp_path, data)


def docker_sandbox(**fields: Any) -> dict[str, Any]:
    """A docker-driver sandbox block with no network and no venv, ``fields`` laid over."""
    return {"driver": "docker", "network": "none", "python": None, **fields}


def agentless_task(**changes: Any) -> dict[str, Any]:
    """MINIMAL_TASK with no agent and no prompt, ``changes`` laid over."""
    return task_with(agent={"type": "none"}, initial_prompt=None, **changes)


def check_criterion(spec: dict[str, Any], context: Any) -> Any:
    """One criterion (``spec`` without its description) checked in ``context``, as its result."""
    from pydantic import TypeAdapter

    from coder_eval_dagster.core.criteria import criterion_union
    from coder_eval_dagster.core.scoring import criterion_result, run_check

    criterion = TypeAdapter(criterion_union()).validate_python({"description": "d", **spec})
    return criterion_result(0, criterion, run_check(criterion, context), context.reference)


def omitted(total: int) -> int:
    """The count a capped stream's marker says for ``total`` bytes of output: what the cap left out, and the room
    the marker took from the kept tail (so that all of it stays within the cap)."""
    from coder_eval_dagster.core.sandbox.process import OUTPUT_CAP_BYTES, capped_marker

    left_out = total - OUTPUT_CAP_BYTES
    return left_out + len(capped_marker(left_out)) + 1
