"""Grade a directory against a task's criteria with no agent: coder_eval's ``evaluate TASK DIR``.

The directory is copied into a fresh sandbox as its first template source
(the task's own sources after it, a repo clone before it; the sandbox's
ignore rules apply, so ``node_modules``, ``.venv``... stay out), then the
task's pre_run, criteria and post_run run as in an agentless evaluation.
The result is written flat into one folder, ``task.json``, ``task.html``
and ``sandbox/``, under the variant ``evaluate``; no run.json, no tables.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .evaluation import evaluate, new_evaluation
from .files import is_real_folder
from .layout import ARTIFACTS_DIR, FIRST_REPLICATE, RESULT_FILE, SANDBOX_DIR, read_json
from .models.results import EvaluationResult
from .models.sandbox import TemplateDirSource, TemplateSource
from .problems import DOCUMENT, InvalidInput, Problem
from .resolution import RowTask, resolve
from .run_context import RunContext
from .run_spec import RunSpec

VARIANT = "evaluate"  # coder_eval's variant_id for a graded directory


def grading_task(task_file: Path, directory: Path) -> RowTask:
    """The task of ``task_file``, agentless, starting from a copy of ``directory`` (the runs folder of the grade,
    earlier grades in it, is never copied: ``templates.copy_template_dir``); InvalidInput when either cannot be
    graded (before any run folder is made for it)."""
    if not directory.is_dir():
        raise InvalidInput([Problem(str(directory), None, DOCUMENT, "not a directory to grade")])
    resolution = resolve(RunSpec(task_paths=[str(task_file)], include_skipped=True), base_layer=False)
    if resolution.problems:
        raise InvalidInput(resolution.problems)
    if resolution.experiment is None and len(resolution.row_tasks) == 1:
        row_task = resolution.row_tasks[0]
    else:
        found = f"{len(resolution.row_tasks)} row-task(s)" if resolution.row_tasks else "no task"
        why = f"evaluate grades one task without a dataset; this file resolves to {found}"
        raise InvalidInput([Problem(str(task_file), None, DOCUMENT, why)])
    task = row_task.task
    sources = with_directory(task.sandbox.template_sources, directory)
    agentless = task.model_copy(
        update={
            "agent": task.agent.model_copy(update={"type": "none"}),
            "sandbox": task.sandbox.model_copy(update={"template_sources": sources}),
        }
    )
    return replace(row_task, task=agentless, variant_id=VARIANT, replicates=1)


def preserved_sandbox(directory: Path) -> Path | None:
    """The folder to grade when ``directory`` is an evaluation folder (its task.json beside its preserved sandbox):
    ours, ``sandbox/``; coder_eval's, ``artifacts/<task_id>/``. coder_eval re-grades a run's replicate folder so
    (``coder-eval evaluate tasks/x.yaml ./r/default/x/00``); copied whole, its files would be a level too deep."""
    if not (directory / RESULT_FILE).is_file():
        return None
    if is_real_folder(directory / SANDBOX_DIR):
        return directory / SANDBOX_DIR
    artifacts = directory / ARTIFACTS_DIR
    if not artifacts.is_dir():
        return None
    try:
        recorded = read_json(directory / RESULT_FILE)
    except (InvalidInput, OSError):
        recorded = None
    task_id = recorded.get("task_id") if isinstance(recorded, dict) else None
    if isinstance(task_id, str) and task_id and (artifacts / task_id).is_dir():
        return artifacts / task_id
    inside = [path for path in artifacts.iterdir() if path.is_dir()]
    return inside[0] if len(inside) == 1 else None


def with_directory(sources: list[TemplateSource], directory: Path) -> list[TemplateSource]:
    """``directory`` as the first template source (after a repo clone, which must come first)."""
    copied = TemplateDirSource(type="template_dir", path=str(directory.resolve()))
    at = 1 if sources and sources[0].type == "repo" else 0
    return [*sources[:at], copied, *sources[at:]]


def evaluate_directory(row_task: RowTask, folder: Path) -> EvaluationResult:
    """Grade ``row_task`` (:func:`grading_task`); the result and its sandbox go into ``folder``."""
    context = RunContext.create()
    evaluation = new_evaluation(folder.name, folder, row_task, FIRST_REPLICATE, None, context)
    evaluation.folder = folder  # flat: the folder is the evaluation's, not <variant>/<task>/<NN> below it
    try:
        return evaluate(evaluation)
    finally:
        context.close()  # its telemetry sent, its idle namespaces ended, as at the end of a run
