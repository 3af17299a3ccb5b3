"""`coder-eval`: validate, list, run and rescore evaluation tasks."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from .core import credentials
from .core.problems import InvalidInput, Problem
from .core.resolution import Options, discover, kind_of, load_experiment, load_trajectory, resolve
from .core.yamlio import load_document

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _print_problems(problems: Sequence[Problem]) -> None:
    sys.stderr.write("".join(f"{p}\n" for p in problems))


def _selection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", type=Path, help="task files or folders (recursive *.yaml, *.yml)")
    parser.add_argument("-e", "--experiment", type=Path, help="experiment file (variants, defaults, repeats)")
    parser.add_argument(
        "-D",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="override a task field (YAML value); repeatable, merged per key",
    )
    parser.add_argument("--type", dest="agent_type", help="agent type override (claude-code, codex, none, replay)")
    parser.add_argument("--sample", type=int, metavar="N", help="fixed-seed sample of N rows per stratum")
    parser.add_argument("--tags", default="", help="only tasks with any of these comma-separated tags")
    parser.add_argument("--include-skipped", action="store_true", help="also run tasks marked skip: true")


def options_from(args: argparse.Namespace) -> Options:
    return Options(
        paths=list(args.paths),
        experiment=args.experiment,
        overrides=list(args.overrides),
        agent_type=args.agent_type,
        sample=args.sample,
        tags=[t.strip() for t in args.tags.split(",") if t.strip()],
        include_skipped=args.include_skipped,
    )


# ----------------------------------------------------------------------------- validate


def _file_problems(path: Path) -> list[Problem]:
    """Everything wrong with one file, judged on its own."""
    try:
        doc = load_document(path)
        kind = kind_of(doc)
        if kind == "trajectory":
            load_trajectory(path)
            return []
        if kind == "experiment":
            experiment = load_experiment(path)
            if not experiment.model.tasks:
                return []
            return resolve(Options(experiment=path, include_skipped=True)).problems
    except InvalidInput as exc:
        return exc.problems
    return resolve(Options(paths=[path], include_skipped=True)).problems


def cmd_validate(args: argparse.Namespace) -> int:
    files, problems = discover(list(args.paths))
    _print_problems(problems)
    invalid = bool(problems)
    for path in files:
        found = _file_problems(path)
        if found:
            invalid = True
            _print_problems(found)
        else:
            print(f"OK {path}")
    return EXIT_FAILED if invalid else EXIT_OK


# ----------------------------------------------------------------------------- list


def cmd_list(args: argparse.Namespace) -> int:
    options = options_from(args)
    if not options.paths and options.experiment is None:
        print("coder-eval list: give task paths or -e EXPERIMENT", file=sys.stderr)
        return EXIT_USAGE
    result = resolve(options)
    if result.problems:
        _print_problems(result.problems)
        return EXIT_FAILED
    sys.stdout.write("".join(f"{rt.variant_id} {rt.task_id}\n" for rt in result.row_tasks))
    for task_id in result.skipped:
        print(f"skipped {task_id}", file=sys.stderr)
    return EXIT_OK


# ----------------------------------------------------------------------------- run, rescore


def cmd_run(args: argparse.Namespace) -> int:
    from .run_command import run

    options = options_from(args)
    if not options.paths and options.experiment is None:
        print("coder-eval run: give task paths or -e EXPERIMENT", file=sys.stderr)
        return EXIT_USAGE
    return run(options, args.runs_dir, args.concurrency)


def cmd_rescore(args: argparse.Namespace) -> int:
    from .run_command import rescore

    return rescore(args.run_dir, args.concurrency)


# ----------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="coder-eval", description="Evaluate AI coding agents on task YAML files.")
    commands = parser.add_subparsers(dest="command", required=True)
    validate = commands.add_parser("validate", help="check task and experiment files")
    validate.add_argument("paths", nargs="+", type=Path)
    validate.set_defaults(handler=cmd_validate)
    listing = commands.add_parser("list", help="print the row-tasks x variants a run would execute")
    _selection_arguments(listing)
    listing.set_defaults(handler=cmd_list)
    running = commands.add_parser("run", help="run the row-tasks x variants through the Dagster asset graph")
    _selection_arguments(running)
    _run_arguments(running)
    running.set_defaults(handler=cmd_run)
    rescoring = commands.add_parser("rescore", help="re-run criteria and suite metrics of an earlier run")
    rescoring.add_argument("run_dir", type=Path)
    _run_arguments(rescoring, runs_dir=False)
    rescoring.set_defaults(handler=cmd_rescore)
    return parser


def _run_arguments(parser: argparse.ArgumentParser, runs_dir: bool = True) -> None:
    parser.add_argument("--concurrency", type=int, default=0, help="evaluations at once (default: CPU count)")
    if runs_dir:
        parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where run folders go (default runs/)")


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the program itself, not a caller in-process: no credential stays in /proc/<pid>/environ
        credentials.reexec_without_credentials()
    # Dagster marks backfill_policy as beta; the notice is for library authors, not for our users.
    warnings.filterwarnings("ignore", message=r".*is currently in beta.*")
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except InvalidInput as exc:
        _print_problems(exc.problems)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("coder-eval: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last line of defence: one line, never a traceback
        if os.environ.get("CODER_EVAL_DEBUG"):
            raise
        print(
            f"coder-eval: internal error: {type(exc).__name__}: {exc} (set CODER_EVAL_DEBUG=1 for details)",
            file=sys.stderr,
        )
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
