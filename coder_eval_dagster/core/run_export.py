"""`coder-eval export`: a run folder's trajectories written out in an interchange format (ATIF: atif.py)."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path

from .atif import atif_json, to_atif
from .layout import ATIF_FILE, RESULT_FILE, evaluation_files, load_result, write_atomically
from .runs import load_run


@dataclass
class Export:
    written: list[Path] = field(default_factory=list)
    without_agent: int = 0  # evaluations whose agent took no turn (agentless tasks, errors before the agent)


def export_atif(run_dir: Path, out_dir: Path | None = None) -> Export:
    """Each evaluation's ATIF file at ``<variant>/<task_id>/<NN>/trajectory.atif.json`` under ``out_dir``
    (default: the run folder itself, beside its task.json)."""
    earlier: dict[tuple[str, str], str | None] | None = None  # the snapshot's prompts, read once if needed
    export = Export()
    for path in evaluation_files(run_dir, RESULT_FILE):
        result = load_result(path)
        if not result.trajectory:
            export.without_agent += 1
            continue
        target = (out_dir or run_dir) / path.parent.relative_to(run_dir) / ATIF_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        prompt = result.prompt
        if prompt is None:  # a task.json written before results kept their prompt
            earlier = _prompts(run_dir) if earlier is None else earlier
            prompt = earlier.get((result.variant_id, result.task_id))
        write_atomically(target, atif_json(to_atif(result, prompt)))
        export.written.append(target)
    return export


def _prompts(run_dir: Path) -> dict[tuple[str, str], str | None]:
    """Each row-task's opening prompt, from the run's snapshot (for results written without theirs)."""
    try:
        row_tasks = load_run(run_dir).snapshot.row_tasks
    except (OSError, ValueError, EOFError, ImportError, AttributeError, pickle.UnpicklingError):  # none, or unreadable
        return {}
    return {(rt.variant_id, rt.task_id): rt.task.initial_prompt for rt in row_tasks}
