"""`coder-eval`: validate, list, run and rescore evaluation tasks."""

from __future__ import annotations

import argparse
import os
import sys
import typing
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from . import exit_codes
from .compare_cli import add_commands as add_compare_commands
from .core import credentials
from .core.agents import AGENT_TYPES
from .core.models.sandbox import unbound_limits
from .core.preflight import check_environment, dagster_home
from .core.problems import InvalidInput, Problem
from .core.resolution import discover, kind_of, load_experiment, load_trajectory, resolve
from .core.routing import RouteError
from .core.run_spec import DEFAULT_JUDGE_CONCURRENCY, JudgeSettings, RunSpec
from .core.yamlio import load_document
from .deploy_cli import add_commands as add_deploy_commands
from .instance_cli import add_commands as add_instance_commands
from .sandbox_cli import add_commands as add_sandbox_commands


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (``coder-eval run: argument --sample: ...``), exit 2."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(exit_codes.USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _count(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


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
    parser.add_argument("--type", dest="agent_type", help=f"agent type override ({', '.join(AGENT_TYPES)})")
    parser.add_argument("--model", help="agent.model for every task (shorthand for -D agent.model=MODEL)")
    parser.add_argument("--sample", type=_count(1), metavar="N", help="fixed-seed sample of N rows per stratum")
    parser.add_argument("--tags", default="", help="only tasks with any of these comma-separated tags")
    parser.add_argument("--include-skipped", action="store_true", help="also run tasks marked skip: true")
    parser.add_argument(
        "--task",
        dest="task_patterns",
        action="append",
        default=[],
        metavar="GLOB",
        help="only row-tasks whose id matches (e.g. 'arithmetic_dataset/add-*'); repeatable",
    )
    parser.add_argument("--limit", type=_count(1), metavar="N", help="only the first N row-tasks after filtering")


def spec_from(args: argparse.Namespace) -> RunSpec:
    return RunSpec(
        task_paths=[str(p) for p in args.paths],
        experiment=str(args.experiment) if args.experiment else None,
        overrides=list(args.overrides),
        agent_type=args.agent_type,
        model=args.model,
        sample=args.sample,
        tags=[t.strip() for t in args.tags.split(",") if t.strip()],
        task_patterns=list(args.task_patterns),
        limit=args.limit,
        include_skipped=args.include_skipped,
    )


# ----------------------------------------------------------------------------- validate


def _file_problems(path: Path) -> tuple[list[Problem], list[Problem]]:
    """Everything wrong with one file, judged on its own, and its warnings."""
    try:
        doc = load_document(path)
        kind = kind_of(doc)
        if kind == "trajectory":
            load_trajectory(path)
            return [], []
        if kind == "experiment":
            experiment = load_experiment(path)
            if not experiment.model.tasks:
                return [], []
            resolution = resolve(RunSpec(experiment=str(path), include_skipped=True))
        else:
            resolution = resolve(RunSpec(task_paths=[str(path)], include_skipped=True))
    except InvalidInput as exc:
        return exc.problems, []
    return resolution.problems, resolution.warnings


def cmd_validate(args: argparse.Namespace) -> int:
    files, problems = discover(list(args.paths))
    _print_problems(problems)
    invalid = bool(problems)
    for path in files:
        found, warned = _file_problems(path)
        _print_problems(warned)
        if found:
            invalid = True
            _print_problems(found)
        else:
            _print_limit_warnings(path)
            print(f"OK {path}")
    return exit_codes.FAILED if invalid else exit_codes.OK


def _print_limit_warnings(path: Path) -> None:
    """Limits a task sets that its driver does not enforce: valid, but not what the author expects."""
    doc = load_document(path)
    sandbox = doc.data.get("sandbox") if isinstance(doc.data, dict) else None
    for name, why in unbound_limits(sandbox) if isinstance(sandbox, dict) else []:
        print(
            f"warning: {path}:{doc.line_of(('sandbox', 'limits', name))}: sandbox.limits.{name}: {why}", file=sys.stderr
        )


# ----------------------------------------------------------------------------- list


def cmd_list(args: argparse.Namespace) -> int:
    spec = spec_from(args)
    if not spec.selects_anything:
        print("coder-eval list: give task paths or -e EXPERIMENT", file=sys.stderr)
        return exit_codes.USAGE
    result = resolve(spec)
    _print_problems(result.warnings)
    if result.problems:
        _print_problems(result.problems)
        return exit_codes.FAILED
    sys.stdout.write("".join(f"{rt.variant_id} {rt.task_id}\n" for rt in result.row_tasks))
    for task_id in result.skipped:
        print(f"skipped {task_id}", file=sys.stderr)
    return exit_codes.OK


# ----------------------------------------------------------------------------- schema

SCHEMA_KINDS = ("task", "experiment", "trajectory")


def cmd_schema(args: argparse.Namespace) -> int:
    """The JSON Schema of a file kind, generated from the models (for editor completion)."""
    import json

    from .core.models.experiment import Experiment
    from .core.models.task import Task
    from .core.models.trajectory import Trajectory

    model = {"task": Task, "experiment": Experiment, "trajectory": Trajectory}[args.kind]
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **model.model_json_schema()}
    print(json.dumps(schema, indent=2))
    return exit_codes.OK


# ----------------------------------------------------------------------------- run, rescore


def judge_settings(args: argparse.Namespace) -> JudgeSettings:
    """How the run routes and bounds its model calls (its run context is built from these)."""
    only = getattr(args, "only_criteria", None)
    return JudgeSettings(args.backend, args.judge_concurrency, only)


def cmd_run(args: argparse.Namespace) -> int:
    from .cli_run import resume, run

    spec = spec_from(args)
    again = args.resume or args.retry_errors
    if again is not None:
        if spec.selects_anything:
            print("coder-eval run: --resume / --retry-errors take a run folder, not task paths", file=sys.stderr)
            return exit_codes.USAGE
        if not _environment_ok(again.parent):
            return exit_codes.USAGE
        retry = args.retry_errors is not None
        return resume(again, args.concurrency, retry_errors=retry, judges=judge_settings(args), junit=args.junit)
    if not spec.selects_anything:
        print("coder-eval run: give task paths or -e EXPERIMENT", file=sys.stderr)
        return exit_codes.USAGE
    if not _environment_ok(args.runs_dir):
        return exit_codes.USAGE
    return run(spec, args.runs_dir, args.concurrency, judges=judge_settings(args), junit=args.junit)


def cmd_register(args: argparse.Namespace) -> int:
    from .cli_run import register

    spec = spec_from(args)
    if not spec.selects_anything:
        print("coder-eval register: give task paths or -e EXPERIMENT", file=sys.stderr)
        return exit_codes.USAGE
    return register(spec)


def cmd_rescore(args: argparse.Namespace) -> int:
    from .cli_run import rescore

    if not _environment_ok(args.run_dir.parent):
        return exit_codes.USAGE
    return rescore(args.run_dir, args.concurrency, judges=judge_settings(args), junit=args.junit)


def _environment_ok(runs_dir: Path) -> bool:
    """Where the run writes must be usable before it starts; each problem is one line."""
    problems = check_environment(runs_dir, dagster_home())
    sys.stderr.write("".join(f"coder-eval: {problem}\n" for problem in problems))
    return not problems


# ----------------------------------------------------------------------------- main


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("coder-eval-dagster")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="coder-eval", description="Evaluate AI coding agents on task YAML files.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
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
    again = running.add_mutually_exclusive_group()
    again.add_argument("--resume", type=Path, metavar="RUN_DIR", help="finish a run whose process died, in its folder")
    again.add_argument(
        "--retry-errors", type=Path, metavar="RUN_DIR", help="re-run only the ERROR evaluations of a run, in its folder"
    )
    running.set_defaults(handler=cmd_run)
    registering = commands.add_parser(
        "register", help="add the row-tasks x variants as Dagster partitions, run nothing"
    )
    _selection_arguments(registering)
    registering.set_defaults(handler=cmd_register)
    # `dev` is dispatched in main() (its options are dagster dev's); listed here for --help.
    commands.add_parser("dev", help="dagster dev (UI and daemon) on the CLI's own instance; options go to dagster dev")
    schema = commands.add_parser("schema", help="print the JSON Schema of task (or experiment, trajectory) files")
    schema.add_argument("kind", nargs="?", choices=SCHEMA_KINDS, default="task")
    schema.set_defaults(handler=cmd_schema)
    rescoring = commands.add_parser("rescore", help="re-run criteria and suite metrics of an earlier run")
    rescoring.add_argument("run_dir", type=Path)
    _run_arguments(rescoring, runs_dir=False)
    rescoring.add_argument(
        "--only-criteria",
        type=criterion_types,
        metavar="TYPE[,TYPE]",
        help="re-run only criteria of these types; the others keep their stored results",
    )
    rescoring.set_defaults(handler=cmd_rescore)
    add_compare_commands(commands)
    add_sandbox_commands(commands)
    add_deploy_commands(commands)
    add_instance_commands(commands)
    return parser


def _run_arguments(parser: argparse.ArgumentParser, runs_dir: bool = True) -> None:
    parser.add_argument(
        "--concurrency", type=_count(0), default=0, help="evaluations at once (default, or 0: the CPU count)"
    )
    parser.add_argument("--junit", type=Path, metavar="FILE", help="also write a JUnit XML report (one testcase each)")
    parser.add_argument(
        "-b",
        "--backend",
        choices=["direct", "bedrock"],
        help="model API backend for the agent and the judges (default: $API_BACKEND, else direct)",
    )
    parser.add_argument(
        "--judge-concurrency",
        type=_count(1),
        default=DEFAULT_JUDGE_CONCURRENCY,
        metavar="N",
        help=f"judge calls at once across the run (default {DEFAULT_JUDGE_CONCURRENCY})",
    )
    if runs_dir:
        parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where run folders go (default runs/)")


def criterion_types(text: str) -> list[str]:
    """``TYPE[,TYPE]``: registered criterion type names."""
    from .core.criteria import REGISTRY

    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in REGISTRY]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown criterion type(s) {', '.join(unknown) or text!r}; known: {', '.join(sorted(REGISTRY))}"
        )
    return names


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the program itself, not a caller in-process: no credential stays in /proc/<pid>/environ
        credentials.reexec_without_credentials()
    # Dagster marks backfill_policy as beta; the notice is for library authors, not for our users.
    warnings.filterwarnings("ignore", message=r".*is currently in beta.*")
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["dev"]:  # everything after `dev` is dagster dev's own (-h, -p...)
        from .cli_run import dev

        return dev(words[1:])
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except InvalidInput as exc:
        _print_problems(exc.problems)
        return exit_codes.USAGE
    except RouteError as exc:  # e.g. API_BACKEND=vertex
        print(f"coder-eval: {exc}", file=sys.stderr)
        return exit_codes.USAGE
    except KeyboardInterrupt:
        print("coder-eval: interrupted", file=sys.stderr)
        return exit_codes.INTERRUPTED
    except BrokenPipeError:  # `coder-eval schema | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exit_codes.OK
    except OSError as exc:  # the file system refused: say where, never a traceback
        if os.environ.get("CODER_EVAL_DEBUG"):
            raise
        where = f" {exc.filename}" if exc.filename else ""
        print(f"coder-eval: cannot use{where}: {exc.strerror or exc}; check that path", file=sys.stderr)
        return exit_codes.USAGE
    except Exception as exc:  # the last line of defence: one line, never a traceback
        if os.environ.get("CODER_EVAL_DEBUG"):
            raise
        print(
            f"coder-eval: internal error: {type(exc).__name__}: {exc} (set CODER_EVAL_DEBUG=1 for details)",
            file=sys.stderr,
        )
        return exit_codes.INTERNAL


if __name__ == "__main__":
    sys.exit(main())
