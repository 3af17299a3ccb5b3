"""`coder-eval`: validate, list, run and rescore evaluation tasks."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from . import exit_codes
from .agents_cli import add_commands as add_agent_commands
from .cli_options import (
    DatabaseRetries,
    UsageError,
    add_model_arguments,
    configure_logging,
    flags_of,
    given,
    given_path,
    logging_arguments,
    model_values,
    refuse,
)
from .compare_cli import add_commands as add_compare_commands
from .core import credentials
from .core.environment_settings import SettingError
from .core.files import real_path
from .core.layout import LATEST_LINK, TABLES_DIR, is_runs_folder
from .core.models.sandbox import unbound_limits
from .core.places import dagster_home
from .core.preflight import HOME_FIX, check_environment, folder_problem
from .core.problems import DOCUMENT, InvalidInput, Problem
from .core.resolution import (
    NOT_A_TASK,
    Resolution,
    discover,
    experiment_names_tasks,
    kind_of,
    load_experiment,
    load_trajectory,
    missing_experiment,
    on_command_line,
    resolve,
)
from .core.routing import RouteError
from .core.run_lock import RunFolderBusy
from .core.run_spec import RunOptions, RunSpec
from .core.secrets import DOTENV_LEFT_OUT, MODEL_ROUTE_PREFIXES, ROUTE_SETTINGS
from .core.yamlio import load_document
from .deploy_cli import add_commands as add_deploy_commands
from .evaluate_cli import add_commands as add_evaluate_commands
from .export_cli import add_commands as add_export_commands
from .instance_cli import add_commands as add_instance_commands
from .prune_cli import add_commands as add_prune_commands
from .report_cli import add_commands as add_report_commands
from .sandbox_cli import add_commands as add_sandbox_commands


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (``coder-eval run: argument --sample: ...``), exit 2."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(exit_codes.USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _print_problems(problems: Sequence[Problem], said: set[str] | None = None) -> None:
    """Each problem on its line; with ``said``, one already said by this command is not said again (a folder named
    both as a path and by an experiment file among the paths)."""
    lines = list(dict.fromkeys(f"{p}\n" for p in problems))
    if said is not None:
        lines = [line for line in lines if line not in said]
        said.update(lines)
    sys.stderr.write("".join(lines))


# ----------------------------------------------------------------------------- validate


@dataclass
class FileVerdict:
    """One file judged on its own: its problems, its warnings, and the task ids it defines (a task file's)."""

    problems: list[Problem]
    warnings: list[Problem]
    task_ids: set[str]


def _file_problems(path: Path, experiment: str | None = None) -> FileVerdict:
    """Everything wrong with one file, judged on its own (a task: under ``experiment``, if given)."""
    try:
        doc = load_document(path)
        kind = kind_of(doc)
        if kind == "trajectory":
            load_trajectory(path)
            return FileVerdict([], [], set())
        if kind == "experiment":
            loaded = load_experiment(path)
            if not loaded.model.tasks:
                return FileVerdict([], [], set())
            resolution = resolve(RunSpec(experiment=str(path)))
            return FileVerdict(resolution.problems, resolution.warnings, set())
        # A parked task (skip: true) is checked as a run checks it: its fields, not its dataset or its files.
        resolution = resolve(RunSpec(task_paths=[str(path)], experiment=experiment), experiment_tasks=False)
    except InvalidInput as exc:
        return FileVerdict(exc.problems, [], set())
    return FileVerdict(resolution.problems, resolution.warnings, _task_ids(resolution))


def _task_ids(resolution: Resolution) -> set[str]:
    """The task ids a task file runs under: a parked one's claims none (``run`` runs its replacement beside it)."""
    return {rt.base_task_id for rt in resolution.row_tasks}


def _duplicate_id(path: Path, task_ids: set[str], seen: dict[str, Path]) -> list[Problem]:
    """A task id another file of the same validation already defines: `run` over them both refuses it."""
    duplicates = sorted(task_id for task_id in task_ids if task_id in seen)
    line = load_document(path).line_of(("task_id",)) if duplicates else None
    problems = [
        Problem(str(path), line, "task_id", f"duplicate task_id {task_id!r} (also in {seen[task_id]})")
        for task_id in duplicates
    ]
    seen.update({task_id: path for task_id in task_ids if task_id not in seen})
    return problems


def _not_a_task(path: Path) -> bool:
    """A YAML file that is no task, experiment or trajectory (skipped with a note when a folder holds it)."""
    try:
        return kind_of(load_document(path)) == "other"
    except InvalidInput:
        return False  # its problems are reported with the file's


def cmd_validate(args: argparse.Namespace) -> int:
    """``validate`` (and coder_eval's ``plan``): each file on its own; under ``-e`` each task under its variants."""
    experiment = RunSpec(experiment=args.experiment).experiment if args.experiment else None
    said: set[str] = set()
    paths = expand_patterns(args.paths) or _default_tasks(args.command, experiment, required=experiment is None)
    if experiment is not None and not Path(experiment).exists():  # said as run says it
        _print_problems([Problem(experiment, None, DOCUMENT, missing_experiment(args.experiment))], said)
        return exit_codes.FAILED
    if experiment is not None:  # coder_eval's plan loads the experiment first and stops when it cannot
        verdict = _file_problems(Path(experiment))
        found = verdict.problems
        _print_problems([*verdict.warnings, *found], said)
        if found:
            return exit_codes.FAILED
        if not paths:
            print(f"OK {experiment}")
            return exit_codes.OK
    files, problems = discover(paths)
    _print_problems(problems, said)
    if not files and not problems:  # an empty folder: nothing invalid, but say that nothing was checked
        print(
            f"coder-eval {args.command}: no task files (*.yaml, *.yml) in {' '.join(map(str, paths))}", file=sys.stderr
        )
    invalid = bool(problems)
    named = {real_path(path) for path in paths}
    seen: dict[str, Path] = {}
    for path in files:
        if real_path(path) not in named and _not_a_task(path):
            print(f"note: skipped, {NOT_A_TASK}: {path}", file=sys.stderr)
            continue
        verdict = _file_problems(path, experiment)
        found = verdict.problems or _duplicate_id(path, verdict.task_ids, seen)
        _print_problems(verdict.warnings, said)
        if found:
            invalid = True
            _print_problems(found, said)
        else:
            _print_limit_warnings(path)
            print(f"OK {path}")
    return exit_codes.FAILED if invalid else exit_codes.OK


DEFAULT_TASKS = Path("tasks")  # coder_eval's `run` and `plan` with no paths: every task under tasks/


def _default_tasks(command: str, experiment: str | None, required: bool = True) -> list[Path]:
    """No paths given: ``tasks/`` in the current folder when there is one, as coder_eval (with ``-e`` too, unless
    the experiment names its own ``tasks``); else a usage error (``required`` False: none)."""
    if experiment is not None and experiment_names_tasks(Path(experiment)):
        return []
    if DEFAULT_TASKS.is_dir():
        print(f"coder-eval {command}: no paths given: {DEFAULT_TASKS}/", file=sys.stderr)
        return [DEFAULT_TASKS]
    if not required:
        return []
    if experiment is not None:
        raise UsageError(f"give task paths: {experiment} names no tasks and there is no {DEFAULT_TASKS}/ folder here")
    raise UsageError(f"give task paths or -e EXPERIMENT (no {DEFAULT_TASKS}/ folder here)")


def _with_default_tasks(spec: RunSpec, command: str) -> RunSpec:
    """No paths, and no experiment naming its own ``tasks``: the tasks under ``tasks/``, as ``run`` takes them
    (coder_eval's); neither paths nor a ``tasks/`` folder: a usage error."""
    if spec.task_paths:
        return spec
    return spec.model_copy(update={"task_paths": [str(path) for path in _default_tasks(command, spec.experiment)]})


GLOB_CHARACTERS = frozenset("*?[")


def expand_patterns(paths: Sequence[Path]) -> list[Path]:
    """Task arguments as coder_eval's ``expand_task_files`` takes them: one that is no path but holds ``*``, ``?``
    or ``[`` is a glob pattern (``**`` recursive, as quoted in a CI job), its matches sorted; a pattern that matches
    nothing is a usage error naming it."""
    expanded: list[Path] = []
    for path in paths:
        text = str(path)
        if path.exists() or not GLOB_CHARACTERS & set(text):
            expanded.append(path)
            continue
        anchor = Path(path.anchor) if path.is_absolute() else Path()
        pattern = str(path.relative_to(path.anchor)) if path.is_absolute() else text
        try:
            matches = sorted(anchor.glob(pattern))
        except ValueError as exc:  # an invalid pattern (`a**b`)
            raise UsageError(f"task pattern {text!r}: {exc}") from None
        if not matches:
            raise UsageError(f"no task file matches the pattern {text!r} (from {Path.cwd()})")
        expanded.extend(matches)
    return expanded


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
    """The row-tasks a run would execute, one a line; none is said on stderr with what was left out, as ``run``
    says it (an empty listing, exit 0, read as a folder or filter that matched)."""
    from .cli_run import nothing_selected, print_skipped

    result = resolve(_with_default_tasks(parsed(RunSpec, args), "list"))
    result.skip_invalid_folder_files()
    _print_problems(result.warnings)
    if result.problems:
        _print_problems(result.problems)  # a -D that does not apply is the command's usage, as for run
        return exit_codes.USAGE if any(map(on_command_line, result.problems)) else exit_codes.FAILED
    sys.stdout.write("".join(f"{rt.variant_id} {rt.task_id}\n" for rt in result.row_tasks))
    print_skipped(result)
    if not result.row_tasks:
        print(nothing_selected("list", result), file=sys.stderr)
    return exit_codes.FAILED if any(entry.invalid for entry in result.skipped) else exit_codes.OK


# ----------------------------------------------------------------------------- schema

SCHEMA_KINDS = ("task", "experiment", "trajectory")


def cmd_schema(args: argparse.Namespace) -> int:
    """The JSON Schema of a file kind, generated from the models (for editor completion)."""
    import json

    from .core.models.experiment import Experiment
    from .core.models.task import Task
    from .core.models.trajectory import Trajectory

    models: dict[str, type[BaseModel]] = {"task": Task, "experiment": Experiment, "trajectory": Trajectory}
    model = models[args.kind]
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **model.model_json_schema()}
    print(json.dumps(schema, indent=2))
    return exit_codes.OK


# ----------------------------------------------------------------------------- run, rescore


def cmd_run(args: argparse.Namespace) -> int:
    from .cli_run import resume, run

    spec, options = parsed(RunSpec, args), parsed(RunOptions, args)
    again = _run_folder_to_continue(args)
    if options.estimate_format != "table" and not options.estimate:
        print("coder-eval run: --format is the format of --estimate's forecast; add --estimate", file=sys.stderr)
        return exit_codes.USAGE
    if again is None:  # coder_eval's `run` with no paths: tasks/ (under -e too)
        spec = _with_default_tasks(spec, "run")
    if options.estimate:
        return _estimate(spec, options, again)
    if again is not None:
        ignored = [*_selection_flags(spec), *_runs_dir_elsewhere(options.runs_dir, again)]
        if ignored:
            flag = "--resume" if args.resume is not None else "--retry-errors"
            print(
                f"coder-eval run: {flag} takes a run folder, not task paths or selection options (the run folder "
                f"keeps its own selection: its tasks, experiment, overrides, repeats): drop {', '.join(ignored)}",
                file=sys.stderr,
            )
            return exit_codes.USAGE
        _refuse_inside_a_run(again)
        if not _environment_ok(again.parent, args.junit):
            return exit_codes.USAGE
        options = options.model_copy(update={"runs_dir": str(again.parent)})
        return resume(again, options, retry_errors=args.retry_errors is not None, junit=args.junit)
    folder = _named_run(args.run_dir, options.runs_dir)
    if folder is not None:
        options = options.model_copy(update={"runs_dir": str(folder.parent)})
    if not _environment_ok(Path(options.runs_dir), args.junit):
        return exit_codes.USAGE
    return run(spec, options, junit=args.junit, folder=folder)


def _named_run(run_dir: Path | None, runs_dir: str) -> Path | None:
    """coder_eval's ``run --run-dir DIR`` (its GitHub Action's form): DIR is the new run's folder, made in the runs
    folder DIR's parent (its tables and ``latest`` there). Refused: a DIR that holds anything (``--resume``
    finishes a run), one named as the runs folder's own entries (``tables``, ``latest``) or with no name (``.``),
    one inside a run folder, and a ``--runs-dir`` elsewhere."""
    if run_dir is None:
        return None
    folder = Path(os.path.abspath(run_dir))
    if folder.name in ("", TABLES_DIR, LATEST_LINK) or run_dir.name in ("", ".", ".."):
        raise UsageError(f"argument --run-dir: {run_dir} names no new run folder: give RUNS_FOLDER/NAME")
    elsewhere = real_path(Path(runs_dir)) != real_path(folder.parent)
    if runs_dir != RunOptions.model_fields["runs_dir"].default and elsewhere:
        raise UsageError(
            f"argument --run-dir: the run's folder {run_dir} is made in the runs folder {folder.parent}, not "
            f"{runs_dir}: give --run-dir or --runs-dir"
        )
    if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
        raise UsageError(
            f"argument --run-dir: {run_dir} already exists: a new run needs a new folder (--resume {run_dir} "
            "finishes the run in it)"
        )
    from .core.layout import run_folder_above, run_table_files

    inside = run_folder_above(folder)
    if inside is not None:
        raise UsageError(f"argument --run-dir: {run_dir} is inside the run folder {inside}: give a folder of its own")
    if run_table_files(folder.parent, folder.name):
        raise UsageError(
            f"argument --run-dir: {folder.parent / TABLES_DIR} already holds the rows of an earlier run named "
            f"{folder.name} (its folder was removed); a run's rows go under its folder's name, so this run would "
            "replace them: give a new name"
        )
    return run_dir


def _selection_flags(spec: RunSpec) -> list[str]:
    """The selection options given (task paths, ``-e``, ``-D``, ``--repeats``...): a resume has its run's own."""
    given_fields = [
        name
        for name, info in RunSpec.model_fields.items()
        if getattr(spec, name) != info.get_default(call_default_factory=True)
    ]
    return [(flags_of(RunSpec, name) or ["task paths"])[0] for name in given_fields]


def _runs_dir_elsewhere(runs_dir: str, run_folder: Path) -> list[str]:
    """``--runs-dir`` given beside a run folder to continue, naming another runs folder than the run's own: the run
    stays where it is (it was silently ignored)."""
    if runs_dir == RunOptions.model_fields["runs_dir"].default or real_path(Path(runs_dir)) == real_path(
        run_folder.parent
    ):
        return []
    return ["--runs-dir"]


# `--resume` with no folder: coder_eval's spelling, `--run-dir RUN_DIR --resume`
_RESUME_IN_RUN_DIR = Path("--run-dir")


def _run_folder_to_continue(args: argparse.Namespace) -> Path | None:
    """The run folder ``--resume`` / ``--retry-errors`` continue; coder_eval's ``--run-dir R --resume`` is
    ``--resume R`` (``--run-dir`` alone names a new run's folder: ``_named_run``)."""
    if args.resume is _RESUME_IN_RUN_DIR:
        if args.run_dir is None:
            raise UsageError("argument --resume: give the run folder: --resume RUN_DIR (or --run-dir RUN_DIR --resume)")
        return Path(args.run_dir)
    if args.run_dir is not None and args.resume is not None:  # `--run-dir R --resume tasks/`: argparse gave the
        raise UsageError(  # path to --resume as its folder
            f"argument --resume: a resume takes no task paths (the run folder keeps its own selection): give "
            f"--run-dir {args.run_dir} --resume, or --resume {args.run_dir}, alone ({args.resume} was read as "
            "--resume's folder)"
        )
    again: Path | None = args.resume or args.retry_errors
    return again


def _estimate(spec: RunSpec, options: RunOptions, again: Path | None) -> int:
    """``run --estimate``: a forecast of a new run's selection (no run folder, no instance needed)."""
    from .cli_run import estimate

    if again is not None:
        print("coder-eval run: --estimate forecasts a new run: give task paths or -e EXPERIMENT", file=sys.stderr)
        return exit_codes.USAGE
    return estimate(spec, options)


def cmd_register(args: argparse.Namespace) -> int:
    from .cli_run import register

    return register(_with_default_tasks(parsed(RunSpec, args), "register"))


def cmd_rescore(args: argparse.Namespace) -> int:
    from .cli_run import rescore

    _refuse_inside_a_run(args.run_dir)
    if not _environment_ok(args.run_dir.parent, args.junit):
        return exit_codes.USAGE
    options = parsed(RunOptions, args).model_copy(update={"runs_dir": str(args.run_dir.parent)})
    return rescore(args.run_dir, options, junit=args.junit)


def _refuse_inside_a_run(run_dir: Path) -> None:
    """A folder inside a run given as the run to continue (``rescore RUN/default``): name the run folder, as
    ``report`` and ``compare`` do; its parent was checked as a --runs-dir the user never gave."""
    from .core.layout import is_run_folder, run_folder_above

    real = real_path(run_dir)  # through ``latest``
    run = None if is_run_folder(real) else run_folder_above(real)
    if run is not None:
        raise UsageError(f"{run_dir} is a folder inside the run folder {run}: name the run folder ({run})")


def _environment_ok(runs_dir: Path, junit: Path | None) -> bool:
    """Where the run writes (its JUnit file too) must be usable before it starts; each problem is one line."""
    in_tables = _tables_folder_problem(runs_dir)
    problems = [in_tables] if in_tables else check_environment(runs_dir, dagster_home(), junit)
    sys.stderr.write("".join(f"coder-eval: {problem}\n" for problem in problems))
    return not problems


def _tables_folder_problem(runs_dir: Path) -> str | None:
    """A runs folder's tables folder, or a folder inside it, given as a runs folder (``runs/tables/task_results``):
    the run's folder would lie among a table's files, and every reader of that table (pandas, ``history``) fail."""
    real = real_path(runs_dir)
    for folder in (real, *real.parents):
        if folder.name == TABLES_DIR and (is_runs_folder(folder.parent) or (folder.parent / LATEST_LINK).is_symlink()):
            return f"--runs-dir {runs_dir} is the tables folder {folder} or inside it; give a folder of its own"
    return None


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
    validate = commands.add_parser(
        "validate", aliases=["plan"], help="check task and experiment files (plan: coder_eval's spelling)"
    )
    validate.add_argument("paths", nargs="*", type=given_path, help="files or folders (default: tasks/, if there)")
    validate.add_argument(
        "-e",
        "--experiment",
        type=given,
        metavar="FILE|NAME",
        help="also check each task under this experiment's variants",
    )
    validate.set_defaults(handler=cmd_validate)
    listing = commands.add_parser("list", help="print the row-tasks x variants a run would execute")
    add_model_arguments(listing, RunSpec)
    listing.set_defaults(handler=cmd_list)
    running = commands.add_parser("run", help="run the row-tasks x variants through the Dagster asset graph")
    add_model_arguments(running, RunSpec)
    add_model_arguments(running, RunOptions, only=RUN_OPTIONS)
    _junit_argument(running)
    again = running.add_mutually_exclusive_group()
    again.add_argument(
        "--resume",
        type=given_path,
        nargs="?",
        const=_RESUME_IN_RUN_DIR,
        metavar="RUN_DIR",
        help="finish a run whose process died, in its folder (coder_eval's spelling: --run-dir RUN_DIR --resume)",
    )
    again.add_argument(
        "--retry-errors",
        type=given_path,
        metavar="RUN_DIR",
        help="re-run only the ERROR evaluations of a run, in its folder",
    )
    running.add_argument(
        "--run-dir",
        type=given_path,
        metavar="RUN_DIR",
        help="a new run's folder (its runs folder is its parent); with --resume: the run folder to finish",
    )
    logging_arguments(running, log_file=True)
    refuse(
        running,
        "-s",
        "--stream",
        why="no live stream of the agent's events here: the run shows its progress, and each evaluation's "
        "transcript is in its task.json and task.html (and in the Dagster UI: coder-eval dev)",
    )
    for flag in HARBOR_AGENT_FLAGS:
        refuse(running, flag, why=HARBOR_AGENT_WHY)
    refuse(running, "--allow-host-grading", why=HOST_GRADING_WHY)
    refuse(
        running,
        "--preservation-mode",
        why="every evaluation's final sandbox is kept in the run folder (<NN>/sandbox/); "
        "remove old runs with coder-eval prune",
    )
    running.set_defaults(handler=cmd_run)
    registering = commands.add_parser(
        "register", help="add the row-tasks x variants as Dagster partitions, run nothing"
    )
    add_model_arguments(registering, RunSpec)
    registering.set_defaults(handler=cmd_register)
    # `dev` is dispatched in main() (its options are dagster dev's); listed here for --help.
    commands.add_parser("dev", help="dagster dev (UI and daemon) on the CLI's own instance; options go to dagster dev")
    schema = commands.add_parser("schema", help="print the JSON Schema of task (or experiment, trajectory) files")
    schema.add_argument("kind", nargs="?", choices=SCHEMA_KINDS, default="task")
    schema.set_defaults(handler=cmd_schema)
    rescoring = commands.add_parser("rescore", help="re-run criteria and suite metrics of an earlier run")
    rescoring.add_argument("run_dir", type=given_path)
    add_model_arguments(rescoring, RunOptions, only=RESCORE_OPTIONS)
    _junit_argument(rescoring)
    rescoring.set_defaults(handler=cmd_rescore)
    add_evaluate_commands(commands)
    add_report_commands(commands)
    add_compare_commands(commands)
    add_export_commands(commands)
    add_sandbox_commands(commands)
    add_agent_commands(commands)
    add_deploy_commands(commands)
    add_instance_commands(commands)
    add_prune_commands(commands)
    return parser


# Which run options each command takes (``run`` has every one a CLI user sets; ``rescore`` writes into the run).
RUN_OPTIONS = ("concurrency", "runs_dir", "backend", "judge_concurrency", "no_reuse", "estimate", "estimate_format")
RESCORE_OPTIONS = ("concurrency", "backend", "judge_concurrency", "only_criteria", "no_reuse")


EXECUTE_REFUSED = (
    "coder-eval execute: not supported: every run here grades what the agent did (coder_eval's execute "
    "leaves its rows NOT_GRADED); use coder-eval run, and coder-eval rescore RUN_DIR to grade a run again "
    "without running the agent"
)

# coder_eval's Harbor integration (its `harbor` verb, `export TASK_FILES -o DIR`, a Harbor agent's `run` options):
# not here, each refused in one line (docs/coming-from-coder-eval.md, Not supported).
HARBOR_REFUSED = (
    "coder-eval harbor: not supported: there is no Harbor integration here (no reward.json); a run's results are "
    "its run.json, task.json files and Parquet tables, and coder-eval export RUN_DIR --format atif writes each "
    "evaluation's trajectory in Harbor's ATIF"
)
HARBOR_EXPORT_REFUSED = (
    "coder-eval export: not supported: exporting task files to Harbor task folders (coder_eval's export "
    "TASK_FILES -o DIR --format harbor); export here takes a run folder: coder-eval export RUN_DIR --format atif "
    "[--out DIR] writes each evaluation's trajectory in Harbor's ATIF"
)
HARBOR_EXPORT_OPTIONS = ("-o", "--output")  # coder_eval's export takes them; ours writes to --out
HARBOR_AGENT_FLAGS = ("--workspace-dir", "--logging-dir", "--artifacts-dir")
HARBOR_AGENT_WHY = (
    "a Harbor agent's run in folders it names (coder_eval's --workspace-dir, --logging-dir, --artifacts-dir): "
    "every evaluation runs in its own sandbox under the run folder (<NN>/sandbox/), its task.json beside it"
)
HOST_GRADING_WHY = (
    "a driver: docker row is graded under its own driver, as its run was (on this host its files and tools could "
    "score it differently)"
)


def _harbor_form(words: Sequence[str]) -> str | None:
    """The one line refusing coder_eval's Harbor verb or its ``export TASK_FILES -o DIR`` form, or None."""
    if words[:1] == ["harbor"]:
        return HARBOR_REFUSED
    if words[:1] == ["export"] and any(word.split("=")[0] in HARBOR_EXPORT_OPTIONS for word in words[1:]):
        return HARBOR_EXPORT_REFUSED
    return None


def _junit_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--junit",
        "--junit-xml",
        type=given_path,
        metavar="FILE",
        help="also write a JUnit XML report (one testcase each)",
    )


Model = TypeVar("Model", bound=BaseModel)


def parsed(model: type[Model], args: argparse.Namespace) -> Model:
    """``model`` from the parsed arguments; a value it refuses is a usage error naming the flag."""
    values = model_values(model, args)
    if "task_paths" in values:  # quoted glob patterns, as coder_eval takes them
        values["task_paths"] = [str(path) for path in expand_patterns([Path(p) for p in values["task_paths"]])]
    try:
        return model(**values)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else ""
        message = str(error["msg"]).removeprefix("Value error, ")
        raise UsageError(f"argument {'/'.join(flags_of(model, name)) or name}: {message}") from None


# The commands that call models: they read ./.env first, as coder_eval's config does (its docs: "Set these in .env").
DOTENV_COMMANDS = frozenset({"run", "rescore", "evaluate", "dev"})
DOTENV = Path(".env")
# What is taken from .env: the credentials and the model-route and telemetry settings, which no sandbox command
# sees (secrets.MODEL_ROUTE_PREFIXES, secrets.ROUTE_SETTINGS); any other variable is left out (said on stderr): .env
# files hold an application's settings too, and a sandbox command sees the environment.
LOG_LEVEL_OF_DOTENV = "CODER_EVAL_DOTENV_LOG_LEVEL"  # .env's LOG_LEVEL, for -v; no sandbox is given LOG_LEVEL


def _taken_from_dotenv(name: str) -> bool:
    return credentials.is_secret_name(name) or name.startswith(MODEL_ROUTE_PREFIXES) or name in ROUTE_SETTINGS


def read_dotenv(command: str | None) -> str | None:
    """``./.env`` into the environment for a command that calls models; why not, when it cannot be read.

    Its values win over the environment's, as coder_eval's ``load_dotenv(override=True)`` (a variable it replaces
    is named on stderr, never its value). Read before the credentials are handed over and taken out of the
    environment (``credentials.reexec_without_credentials``): a key from .env then travels as an exported one does,
    and the re-executed image (which receives them) does not read it again.
    """
    if command not in DOTENV_COMMANDS or credentials.HANDOVER_FD in os.environ or not DOTENV.is_file():
        return None
    from dotenv import dotenv_values

    try:
        read = dotenv_values(DOTENV, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"coder-eval: cannot read {DOTENV.absolute()}: {exc}"
    values = {name: value for name, value in read.items() if value is not None}
    if values.get("LOG_LEVEL"):
        os.environ.setdefault(LOG_LEVEL_OF_DOTENV, values["LOG_LEVEL"])  # through the re-exec, not to a sandbox
    taken = {name: value for name, value in values.items() if _taken_from_dotenv(name)}
    left = sorted(name for name in values if name != "LOG_LEVEL" and name not in taken)
    replaced = sorted(name for name, value in taken.items() if os.environ.get(name, value) != value)
    os.environ.update(taken)
    if command == "dev":  # `dagster dev` reads the whole file into its processes again
        os.environ[DOTENV_LEFT_OUT] = ",".join(sorted(set(values) - set(taken)))
    if replaced:
        print(f"coder-eval: {DOTENV} sets {', '.join(replaced)} over the environment's", file=sys.stderr)
    if left:
        print(
            f"coder-eval: {DOTENV}: not read: {', '.join(left)} (only credentials, model-route settings and LOG_LEVEL "
            "are taken from it; export the others)",
            file=sys.stderr,
        )
    return None


def _verbose(args: argparse.Namespace, dotenv_level: str | None) -> bool:
    """``-v``, or coder_eval's ``LOG_LEVEL=DEBUG`` (in .env, else exported) for a command that takes ``-v``."""
    if not hasattr(args, "verbose"):
        return False
    level = dotenv_level or os.environ.get("LOG_LEVEL", "")
    return bool(args.verbose) or level.strip().upper() == "DEBUG"


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the program itself, not a caller in-process: no credential stays in /proc/<pid>/environ
        unreadable = read_dotenv(next(iter(sys.argv[1:2]), None))
        if unreadable:
            print(unreadable, file=sys.stderr)
            return exit_codes.USAGE
        credentials.reexec_without_credentials()
    dotenv_level = os.environ.pop(LOG_LEVEL_OF_DOTENV, None)  # out of the environment before anything is started
    logging.getLogger().addFilter(DatabaseRetries())
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["dev"]:  # everything after `dev` is dagster dev's own (-h, -p...)
        from .cli_run import dev

        try:
            return dev(words[1:])
        except OSError as exc:
            return _file_system_refused(exc)
        except Exception as exc:
            return _last_line_of_defence(exc, "dev")
    if words[:1] == ["execute"]:  # coder_eval's verb, refused in one line whatever its options
        print(EXECUTE_REFUSED, file=sys.stderr)
        return exit_codes.USAGE
    if harbor := _harbor_form(words):
        print(harbor, file=sys.stderr)
        return exit_codes.USAGE
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        configure_logging(_verbose(args, dotenv_level), getattr(args, "log_file", None))
        return handler(args)
    except InvalidInput as exc:
        _print_problems(exc.problems)
        return exit_codes.USAGE
    except UsageError as exc:
        print(f"coder-eval {args.command}: {exc} (see coder-eval {args.command} --help)", file=sys.stderr)
        return exit_codes.USAGE
    except RunFolderBusy as exc:  # --resume on a run whose process is still going
        print(f"coder-eval {args.command}: {exc}", file=sys.stderr)
        return exit_codes.USAGE
    except (RouteError, SettingError) as exc:  # e.g. API_BACKEND=vertex, CODER_EVAL_CONCURRENCY=abc
        print(f"coder-eval: {exc}", file=sys.stderr)
        return exit_codes.USAGE
    except KeyboardInterrupt:
        from .core.sandbox.containment import release_all

        release_all()  # the namespaces this process started, and what runs in them, ended before it exits
        print("coder-eval: interrupted", file=sys.stderr)
        return exit_codes.INTERRUPTED
    except BrokenPipeError:  # `coder-eval schema | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exit_codes.OK
    except OSError as exc:
        return _file_system_refused(exc)
    except Exception as exc:
        return _last_line_of_defence(exc, args.command)


def _file_system_refused(exc: OSError) -> int:
    """Where and why, never a traceback; a DAGSTER_HOME that cannot be used said as ``run`` says it before it starts
    (``register`` and ``dev`` meet it opening the instance)."""
    if os.environ.get("CODER_EVAL_DEBUG"):
        raise exc
    home = dagster_home()
    refused_home = exc.filename is not None and Path(exc.filename).absolute() == home.absolute()
    if refused_home and (problem := folder_problem(home, "DAGSTER_HOME", HOME_FIX)):
        print(f"coder-eval: {problem}", file=sys.stderr)
        return exit_codes.USAGE
    where = f" {exc.filename}" if exc.filename else ""
    print(f"coder-eval: cannot use{where}: {exc.strerror or exc}; check that path", file=sys.stderr)
    return exit_codes.USAGE


def _last_line_of_defence(exc: Exception, command: str) -> int:
    """One line, never a traceback: the Dagster instance's storage that cannot be used (a database down, a wrong
    password, a variable its dagster.yaml reads unset) is the user's to fix (exit 2); anything else is ours."""
    if os.environ.get("CODER_EVAL_DEBUG"):
        raise exc
    storage = storage_problem(exc)
    if storage is not None:
        resume = "; a run this cut short goes on with: coder-eval run --resume RUN_DIR" if command in RESUMED else ""
        print(
            f"coder-eval: the Dagster instance cannot be used: {storage} (check its dagster.yaml and its database"
            f"{resume})",
            file=sys.stderr,
        )
        return exit_codes.USAGE
    print(
        f"coder-eval: internal error: {type(exc).__name__}: {exc} (set CODER_EVAL_DEBUG=1 for details)",
        file=sys.stderr,
    )
    return exit_codes.INTERNAL


RESUMED = frozenset({"run"})  # the commands a storage error can cut short mid-run, for --resume to go on with
STORAGE_ERRORS = frozenset(
    {
        "DagsterPostgresException",
        "DatabaseError",  # SQLAlchemy's and sqlite3's: a file that is no database, or a damaged one
        "OperationalError",
        "DagsterInvalidConfigError",
        "PostProcessingError",
        "InstanceConfigInvalid",
    }
)
# SQLAlchemy's drivers for a `postgresql://` URL that names none (psycopg, not installed; docs: +psycopg2)
DATABASE_DRIVERS = frozenset({"psycopg", "asyncpg", "pg8000"})
# Dagster's own checks that fail on what a dagster.yaml says (not a mapping; a storage module that is not there)
STORAGE_CHECKS = re.compile(r"dagster\.yaml|Couldn't import module|Couldn't find class")
# the line of a storage error that says why: the server's answer, the connection's, a variable the config reads
STORAGE_CAUSES = re.compile(r"FATAL|refused|could not|environment variable|No module named|timeout|does not exist")
# after Dagster's "Received unexpected config entry" in a dagster.yaml: the instance's whole config schema
SCHEMA_DUMP = re.compile(r'\. Expected: "\{.*$')
# SQLAlchemy's lines after its message: the statement, its parameters, a link to its docs
STATEMENT_LINES = re.compile(r"^\s*(\[SQL: |\[parameters: |\(Background on this error)")


def storage_problem(exc: BaseException) -> str | None:
    """What the instance's storage said, in one line, when ``exc`` (or what caused it) is a storage error: its
    innermost cause says why (``password authentication failed``, ``Connection refused``, a variable not set)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    if not any(_is_storage_error(error) for error in chain):
        return None
    lines = [
        line for error in chain for line in str(error).splitlines() if line.strip() and not STATEMENT_LINES.match(line)
    ]
    said = next((line for line in lines if STORAGE_CAUSES.search(line)), lines[-1] if lines else type(exc).__name__)
    said = re.sub(r"^\(?[\w.]+(Error|Exception)\)?:? ", "", " ".join(said.split()))
    said = SCHEMA_DUMP.sub(".", said)  # a dagster.yaml's unknown key: Dagster's whole schema followed, 4 KB
    if any(_missing_driver(error) for error in chain):
        said += " (a PostgreSQL URL names its driver: postgresql+psycopg2://...)"
    database = _sqlite_file(chain)
    return f"{said}: {database}" if database else said


def _sqlite_file(chain: list[BaseException]) -> str | None:
    """The SQLite file the failing statement ran on (an engine in the traceback's frames), which the error itself
    never names: which of the instance's databases is damaged."""
    for error in chain:
        frame = error.__traceback__
        while frame is not None:
            for value in frame.tb_frame.f_locals.values():
                url = getattr(getattr(value, "engine", None), "url", None)
                if url is not None and str(url.drivername).startswith("sqlite") and url.database:
                    return str(url.database)
            frame = frame.tb_next
    return None


def _is_storage_error(error: BaseException) -> bool:
    kind = type(error).__name__
    if _missing_driver(error):
        return True
    return kind in STORAGE_ERRORS or (kind == "CheckError" and STORAGE_CHECKS.search(str(error)) is not None)


def _missing_driver(error: BaseException) -> bool:
    return isinstance(error, ModuleNotFoundError) and error.name in DATABASE_DRIVERS


if __name__ == "__main__":
    sys.exit(main())
