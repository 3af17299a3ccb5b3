"""`coder-eval evaluate TASK DIR`: grade a directory against a task's criteria, no agent (coder_eval's verb).

It prints each criterion and a summary, and exits 0 when every gating
criterion passed, 1 when one failed (or the grading itself ended in an
error), 2 on invalid input. The result goes to ``--run-dir`` (default: a new
timestamped folder under ``--runs-dir``), flat: task.json, task.html, sandbox/.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from . import exit_codes
from .cli_options import UsageError, given_path, logging_arguments, refuse
from .core.models.results import EvaluationResult
from .core.reports.shown_text import criterion_score, one_line


def add_commands(subparsers: Any) -> None:
    evaluate = subparsers.add_parser("evaluate", help="grade a directory against a task's criteria, no agent")
    evaluate.add_argument("task", type=given_path, metavar="TASK", help="the task file")
    evaluate.add_argument(
        "directory", type=given_path, nargs="?", metavar="DIR", help="the directory to grade (copied, never changed)"
    )
    evaluate.add_argument(
        "--run-dir", type=given_path, metavar="DIR", help="where task.json goes (default: a new folder)"
    )
    evaluate.add_argument("--runs-dir", type=given_path, default=Path("runs"), metavar="DIR", help="default runs/")
    evaluate.add_argument(
        "--copy",
        action="store_true",
        help="grade a copy of DIR in a fresh sandbox (coder_eval's --copy; the only way here, so the default)",
    )
    evaluate.add_argument(
        "-p",
        "--preserve",
        action="store_true",
        help="keep the graded copy in the run folder (coder_eval's default; always so here: sandbox/ beside task.json)",
    )
    evaluate.add_argument(
        "--allow-recorded-commands",
        action="store_true",
        help="coder_eval's consent to run the commands a run folder recorded; evaluate runs only TASK's "
        "(a finished run of ours is graded again with its recorded task by coder-eval rescore): no effect",
    )
    _refuse_release_options(evaluate)
    logging_arguments(evaluate)
    evaluate.set_defaults(handler=cmd_evaluate)


def _refuse_release_options(evaluate: argparse.ArgumentParser) -> None:
    """coder_eval's evaluate options that ask for what is not done here, each refused in one line saying why."""
    refuse(
        evaluate,
        "--in-place",
        why="evaluate grades a copy of DIR in a fresh sandbox (--copy, the default) and never changes DIR",
    )
    refuse(
        evaluate,
        "-P",
        "--no-preserve",
        why="the graded copy is always kept in the run folder (sandbox/, which task.json's sandbox_path names); "
        "remove the folder when done with it",
    )
    refuse(
        evaluate,
        "--workspace",
        why="it grades another directory against a run folder's recorded evaluation; a recorded run is not "
        "read here: grade the directory itself, coder-eval evaluate TASK DIR",
    )
    refuse(
        evaluate,
        "--allow-host-grading",
        why="DIR is graded under the task's own driver (a driver: docker task in its image), as its run would be",
    )
    refuse(
        evaluate,
        "--format",
        "--trajectory",
        why="no Harbor agent's trajectory is read here: evaluate grades DIR with TASK's criteria alone",
    )


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .core.evaluate_directory import evaluate_directory, grading_task, preserved_sandbox
    from .core.preflight import inside_run_problem
    from .core.runs import new_run_dir

    if args.directory is None:  # coder_eval's one-argument form, a run folder, re-grades it: rescore here
        raise UsageError(f"the following arguments are required: DIR{_regrade_hint(args.task)}")
    directory: Path = args.directory
    sandbox = preserved_sandbox(directory)
    if sandbox is not None:  # a run's evaluation folder: its preserved sandbox is the work, as coder_eval re-grades it
        print(f"note: {directory} is an evaluation folder: grading its preserved sandbox {sandbox}", file=sys.stderr)
        directory = sandbox
    problem = inside_run_problem(*((args.run_dir, "--run-dir") if args.run_dir else (args.runs_dir, "--runs-dir")))
    if problem is not None:  # a run's folder is refused; an earlier `evaluate --run-dir` is written over (coder_eval)
        raise UsageError(problem)
    row_task = grading_task(args.task, directory)  # leaves no run folder
    folder = args.run_dir or new_run_dir(args.runs_dir)
    result = evaluate_directory(row_task, folder)
    return report(result, folder)


def _regrade_hint(given: Path) -> str:
    """What grades ``given`` again here when coder_eval's one-argument form named a folder: ``rescore`` of the run
    folder, the one above when ``given`` is one of its evaluation folders (``RUN/<variant>/<task>/<NN>``)."""
    from .core.layout import run_folder_above

    if not given.is_dir():
        return ""
    run = run_folder_above(given)
    if run is None:
        return f"; to grade a finished run again: coder-eval rescore {given}"
    return (
        f"; to grade a finished run again: coder-eval rescore {run}; to grade this evaluation's sandbox with a "
        f"task file: coder-eval evaluate TASK {given}"
    )


def report(result: EvaluationResult, folder: Path) -> int:
    """Each criterion, the tally and the verdict, as coder_eval prints them; the exit code."""
    if result.final_status == "ERROR":
        print(f"\n✗ Evaluation error: {one_line(result.error or '')}")
        return exit_codes.FAILED
    print("Criteria Results:\n")
    for criterion in result.criteria:
        mark = "○" if not criterion.gating else "✓" if criterion.passed else "✗"
        print(f"{mark} {criterion.type}\n  {criterion.description}\n  Score: {criterion_score(criterion)}")
        if criterion.details_text:
            print(f"  Details: {one_line(criterion.details_text)}")
        if criterion.error:
            print(f"  Error: {one_line(criterion.error)}")
        print()
    gating = [c for c in result.criteria if c.gating]
    failed = sum(not c.passed for c in gating)
    print(f"Summary:\n  Passed: {len(gating) - failed}/{len(gating)}\n  Failed: {failed}/{len(gating)}")
    if len(gating) < len(result.criteria):
        print(f"  Informational (weight=0, not gated): {len(result.criteria) - len(gating)}")
    print(f"\nRun directory: {folder}")
    if result.final_status != "SUCCESS":
        why = result.error or f"{failed} criterion/criteria failed."
        print(f"\n{one_line(why)}")
        return exit_codes.FAILED
    print("\nAll criteria passed! ✓")
    return exit_codes.OK
