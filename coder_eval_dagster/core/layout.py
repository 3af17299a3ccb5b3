"""The run folder, the project's public contract on disk: every name a run leaves, and the one atomic writer.

    <runs-dir>/
        index.html                          the runs index (compare/index.py)
        history.html                        `coder-eval history`'s page
        latest -> <run-ts>                  the newest run (a relative link)
        tables/<table>/run_date=<d>/<run>.parquet   the Parquet tables (tables.py)
        tables/<table>/.schema-checked.json         the files the last upgrade pass found complete (tables.CHECKED)
        .cache/uv/                          the wheel cache of sandbox venvs
        <run-ts>/
            run_plan.json, snapshot.pickle  what the run was asked to do, resolved once
            run.json, run.md                its summary (run.json: coder_eval's RunSummary)
            index.html                      the run viewer: every evaluation, sortable, filterable (run_viewer.py)
            experiment.json                 every task across the variants (coder_eval's ExperimentResult)
            experiment.md                   the variants side by side (coder_eval's report verb reads it first)
            comparison.html                 its variants compared (comparison-vs-<run>.html: against another)
            comparison.<figure>.png         the page's figures, named by its stem (compare/figures.py)
            junit.xml                       `coder-eval report -f junit`'s default file
            spend.jsonl                     the run-wide budget's ledger: what each evaluation spent, what did not run
            .run.lock                       held by the process running, resuming or rescoring the run (run_lock.py)
            .open.lock                      serializes creating the plan and snapshot among concurrent chunk runs
            .rescoring                      a rescore under way, or cut short (its task.json files mix two scorings)
            .index-row.html                 the run's row of the runs index, cached
            <variant>/variant.json          the variant's tasks, replicates folded (VariantAggregate)
            <variant>/variant.md            the same, as markdown
            <variant>/<suite_id>/suite.json a dataset-backed task's rows (SuiteRollup)
            <variant>/<task_id>/<NN>/       one evaluation (a dataset row's task_id holds a /; NN from 00)
                run_state.json              its checkpoint after the sandbox phase
                task.json, task.html        its result (task.json: coder_eval's EvaluationResult)
                task.previous.json          the ERROR result --retry-errors replaced (its judges' verdicts reusable)
                judge-<index>.yaml          a judge's transcript
                trajectory.atif.json        the trajectory in ATIF (`coder-eval export --format atif`)
                sandbox/                    the preserved final sandbox
                artifacts/<task_id>/        coder_eval's preserved sandbox (never written here: `evaluate` reads it)
                container.json, docker-io/  the docker driver's container and command output
                .processes.pid              the process namespace serving it (tempdir driver; empty when none)

Files are written whole or not at all (:func:`write_atomically`): a reader,
a resumed run or a chunk run on another machine never sees half of one.
"""

from __future__ import annotations

import glob
import json
import os
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .files import MiB, UnreadableFile, read_input_text
from .models.report import RunSummary, TaskRow
from .models.results import EvaluationResult
from .problems import DOCUMENT, InvalidInput, Problem, problems_from_validation

# A run folder's JSON records are read whole, up to this: a 10,000-row run.json is about 70 MB (some 7 KB a row),
# so 1 GiB leaves room for runs many times that, and still refuses a file no machine here could hold parsed.
MAX_RECORD_BYTES = 1024 * MiB

# A run folder.
PLAN_FILE = "run_plan.json"
SNAPSHOT_FILE = "snapshot.pickle"
OPEN_LOCK_FILE = ".open.lock"  # serializes creating the plan and snapshot among concurrent chunk runs
WORK_LOCK_FILE = ".run.lock"  # held by the CLI process running, resuming or rescoring the run (run_lock.py)
RESCORING_FILE = ".rescoring"  # a rescore under way, or cut short: its task.json files then mix two scorings
SPEND_LEDGER = "spend.jsonl"  # the run-wide budget's ledger: what each evaluation spent, and what did not run
RUN_FILE = "run.json"
RUN_MD = "run.md"
RUN_VIEWER = "index.html"  # the run's own page (the runs folder's index.html is INDEX_PAGE)
EXPERIMENT_FILE = "experiment.json"
EXPERIMENT_MD = "experiment.md"  # the variants side by side (coder_eval's report verb reads it first)
VARIANT_FILE = "variant.json"
VARIANT_MD = "variant.md"
SUITE_FILE = "suite.json"
JUNIT_FILE = "junit.xml"
COMPARISON_PAGE = "comparison.html"
INDEX_ROW = ".index-row.html"  # the run's row of the runs index, cached

# An evaluation folder.
CHECKPOINT_FILE = "run_state.json"
RESULT_FILE = "task.json"
PREVIOUS_RESULT_FILE = "task.previous.json"  # an ERROR's result, set aside by --retry-errors for its verdicts
REPORT_FILE = "task.html"
SANDBOX_DIR = "sandbox"
CONTAINER_FILE = "container.json"
DOCKER_IO_DIR = "docker-io"
ATIF_FILE = "trajectory.atif.json"
NAMESPACE_FILE = ".processes.pid"  # "<unshare pid> <its PID namespace for children>"
ARTIFACTS_DIR = "artifacts"  # coder_eval's preserved sandbox: <NN>/artifacts/<task_id>/

# The runs folder.
LATEST_LINK = "latest"
INDEX_PAGE = "index.html"
HISTORY_PAGE = "history.html"
TABLES_DIR = "tables"


def is_runs_folder(folder: Path) -> bool:
    """A runs folder: its tables beside its runs index."""
    return (folder / TABLES_DIR).is_dir() and (folder / INDEX_PAGE).is_file()


def is_run_folder(folder: Path) -> bool:
    return (folder / PLAN_FILE).is_file() and (folder / SNAPSHOT_FILE).is_file()


def run_folder_above(path: Path) -> Path | None:
    """The run folder (ours) that holds ``path`` somewhere below it, or None."""
    return next((folder for folder in path.absolute().parents if is_run_folder(folder)), None)


def partition_folder(day: date) -> str:
    """A table's folder of the runs started on ``day`` (UTC): a hive partition, ``run_date`` a column to readers."""
    return f"run_date={day.isoformat()}"


def run_table_files(runs_dir: Path, name: str, table: str = "*") -> list[Path]:
    """The table files of the run named ``name`` in this runs folder (of every table, or of ``table``), named by the
    run's id, its folder's name. The tables outlive a run's folder (``prune``, ``rm``): a new run of that name
    would replace its rows."""
    return sorted((runs_dir / TABLES_DIR).glob(f"{table}/run_date=*/{glob.escape(name)}.parquet"))


# <variant>/<task_id>/<NN>/sandbox: an evaluation folder is 3 levels below its run (4 for a dataset row).
SANDBOX_DEPTH = 3
SANDBOX_DIRS = frozenset({SANDBOX_DIR, ARTIFACTS_DIR})  # an evaluation's preserved sandbox: ours, coder_eval's


# Replicates count from 0, as coder_eval's do (folder 00). Run folders written before counted from 1: their
# plan says so (``RunPlan.first_replicate``).
FIRST_REPLICATE = 0
EARLIER_FIRST_REPLICATE = 1


def replicate_name(replicate: int) -> str:
    return f"{replicate:02d}"


def is_replicate_folder(folder: Path) -> bool:
    """A run's evaluation folder (``<NN>``), not a folder the user named for one (``evaluate --run-dir``)."""
    return folder.name.isdigit()


def replicates(count: int, first: int = FIRST_REPLICATE) -> range:
    """The replicate numbers of a row-task run ``count`` times."""
    return range(first, first + count)


def evaluation_folder(run_dir: Path, variant_id: str, task_id: str, replicate: int) -> Path:
    return run_dir / variant_id / task_id / replicate_name(replicate)


def report_path(variant_id: str, task_id: str, replicate: int) -> str:
    """An evaluation's task.html, relative to its run folder."""
    return f"{variant_id}/{task_id}/{replicate_name(replicate)}/{REPORT_FILE}"


def variant_file(run_dir: Path, variant_id: str) -> Path:
    return run_dir / variant_id / VARIANT_FILE


def suite_file(run_dir: Path, variant_id: str, suite_id: str) -> Path:
    return run_dir / variant_id / suite_id / SUITE_FILE


def point_latest(runs_dir: Path, run_dir: Path) -> None:
    """``<runs-dir>/latest`` -> the run folder ``run_dir``, replaced in one step (a relative link). A ``latest`` that
    is not a link (a runs folder copied with ``cp -rL``) is the user's: left as it is, with one warning."""
    link = runs_dir / LATEST_LINK
    if os.path.lexists(link) and not link.is_symlink():
        print(
            f"warning: {link} is not a link (a copied runs folder?): left as it is, not pointed at {run_dir.name}",
            file=sys.stderr,
        )
        return
    temporary = link.with_name(f".{LATEST_LINK}.{os.getpid()}-{threading.get_ident()}.tmp")
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(run_dir.name, target_is_directory=True)
    try:
        os.replace(temporary, link)
    except OSError:
        temporary.unlink()
        raise


def judge_transcript(index: int) -> str:
    return f"judge-{index}.yaml"


def comparison_against(run_name: str) -> str:
    return f"comparison-vs-{run_name}.html"


def cache_dir(runs_dir: Path) -> Path:
    """The shared wheel cache of sandbox venvs (uv), kept beside the runs."""
    return runs_dir / ".cache" / "uv"


def evaluation_files(run_dir: Path, name: str) -> list[Path]:
    """Every evaluation's ``name`` file (task.json, run_state.json) in a run folder, sorted by path.

    What ``sorted(run_dir.glob(f"*/**/{name}"))`` found, without walking the
    preserved sandboxes, ours (``sandbox``) or coder_eval's (``artifacts``): a
    template's or a venv's files, by the thousand per evaluation, and maybe a
    file of the agent's under that name, never an evaluation's result. The
    folders above an evaluation folder are variant, task and row ids: none is
    a sandbox from the third level on.
    """
    found: list[str] = []

    def visit(folder: str, depth: int) -> None:
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if not (depth >= SANDBOX_DEPTH and entry.name in SANDBOX_DIRS):
                            visit(entry.path, depth + 1)
                    elif depth >= 1 and entry.name == name:
                        found.append(entry.path)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return

    visit(str(run_dir), 0)
    return sorted(Path(path) for path in found)


Record = TypeVar("Record", bound=BaseModel)


def read_json(path: Path) -> Any:
    """A JSON file of a run folder; one that is not JSON, not a regular file or too large is an ``InvalidInput``
    naming it."""
    return parsed_json(path, record_text(path))


def parsed_json(path: Path, text: str) -> Any:
    """``text``, the JSON file ``path``'s, parsed; an ``InvalidInput`` naming the file when it cannot be."""
    try:
        return json.loads(text)
    except ValueError as bad:
        raise damaged_record(path, f"not JSON ({bad})") from None
    except RecursionError:
        raise damaged_record(path, "not JSON (nested too deeply to read)") from None
    except MemoryError:
        raise damaged_record(path, "too large to read") from None


def read_record(path: Path, model: type[Record]) -> Record:
    """A report file read into its model; one that is not is an ``InvalidInput`` naming the file and the field."""
    text = record_text(path)
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        data = parsed_json(path, text)
        raise InvalidInput(problems_from_validation(exc, data, str(path), lambda _: None, model=model)) from None


def record_text(path: Path) -> str:
    """A run folder's JSON file as text, read as a user's input is (``read_input_text``): a device, a FIFO or a
    folder put in its place is refused at once, never read without end or waited on, and so is one over
    ``MAX_RECORD_BYTES``. A missing file stays a FileNotFoundError (callers tell "not written yet" from it)."""
    try:
        return read_input_text(path, MAX_RECORD_BYTES)
    except UnreadableFile as refused:  # (its message may end with the path, which the problem says once)
        raise damaged_record(path, str(refused).removesuffix(f": {path}")) from None
    except UnicodeDecodeError as bad:
        raise damaged_record(path, f"not JSON ({bad})") from None


def damaged_record(path: Path, why: str) -> InvalidInput:
    return InvalidInput([Problem(str(path), None, DOCUMENT, why)])


def load_result(path: Path, run_dir: Path | None = None) -> EvaluationResult:
    """A task.json (or run_state.json), as written now, before the report schema or by coder_eval, with what its
    form leaves to the folders (``EvaluationResult.located``) taken from them: ``run_dir``'s, else those its ids
    name above it (a rescore or a resume reads one that the release's ``evaluate`` rewrote in our run)."""
    result = read_record(path, EvaluationResult)
    return result.located(run_dir or holding_run(path, result), path)


def holding_run(path: Path, result: EvaluationResult) -> Path:
    """The run folder of an evaluation's file: the one above ``<variant>/<task_id>/<NN>/`` when the folders are
    named so, else the folder holding the file (another layout: the release's ``evaluate --run-dir``)."""
    above = path.absolute().parents  # NN, the task's folders (a row's two), the variant's, the run's
    names = [*reversed(result.task_id.split("/")), result.variant_id]
    if len(above) > len(names) + 1 and all(above[i + 1].name == name for i, name in enumerate(names)):
        return above[len(names) + 1]
    return path.parent


def run_results(
    run_dir: Path, written: Callable[[Path], EvaluationResult | None] = lambda _: None
) -> dict[Path, EvaluationResult]:
    """Every task.json of the run folder by path: one this process wrote (``written``) from memory, one read from
    its file (``load_result``)."""
    paths = evaluation_files(run_dir, RESULT_FILE)
    return {path: written(path) or load_result(path, run_dir) for path in paths}


def load_summary(run_dir: Path) -> RunSummary:
    """A run's run.json, as written now, before the report schema or by coder_eval (its rows ``completed``, its
    experiment the one its experiment.json names)."""
    summary = read_record(run_dir / RUN_FILE, RunSummary)
    rows = [completed(run_dir, row) for row in summary.task_results]
    update: dict[str, Any] = {}
    if any(new is not row for new, row in zip(rows, summary.task_results, strict=True)):
        update["task_results"] = rows
    if summary.coder_eval_form and summary.experiment is None:  # coder_eval's names none: its experiment.json does
        update["experiment"] = experiment_named(run_dir)
    return summary.model_copy(update=update) if update else summary


def experiment_named(run_dir: Path) -> str | None:
    """The experiment id of the run's experiment.json (coder_eval's ``ExperimentResult``); None without one, or
    when it cannot be read (the run's other records still report)."""
    try:
        data = read_json(run_dir / EXPERIMENT_FILE)
    except (OSError, InvalidInput):
        return None
    found = data.get("experiment_id") if isinstance(data, dict) else None
    return found if isinstance(found, str) else None


def completed(run_dir: Path, row: TaskRow) -> TaskRow:
    """A row coder_eval wrote (ours always have ``criteria``) with what it leaves out (the criteria, the judges'
    usage...) taken from its evaluation's task.json, as a rebuild would; as it is when that file cannot be read."""
    if "criteria" in row.model_fields_set:
        return row
    path = evaluation_folder(run_dir, row.variant_id, row.task_id, row.replicate_index) / RESULT_FILE
    try:
        full = TaskRow.of(load_result(path, run_dir))
    except (OSError, ValueError, InvalidInput):  # ValueError: bytes that are not UTF-8
        return row
    missing = TaskRow.model_fields.keys() - row.model_fields_set
    return row.model_copy(update={name: getattr(full, name) for name in missing})


def write_atomically(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` whole or not at all."""
    with replacing(path) as temporary:
        if isinstance(data, str):
            temporary.write_text(data, encoding="utf-8")
        else:
            temporary.write_bytes(data)


def write_output(path: Path, data: bytes | str) -> None:
    """A file the user named (`-o`, `--junit`): a new or regular one written whole or not at all; through a link,
    or into a device or pipe, written in place, as coder_eval's `write_text` does (a link replaced by a file left
    `-o /dev/stdout` a regular file in /dev, and a renamed target lost what a shell's `> log` wrote after it)."""
    if not (path.is_symlink() or is_special_file(path)):
        path.parent.mkdir(parents=True, exist_ok=True)  # (as an html page's figures beside it make its folder)
        write_atomically(path, data)
    elif isinstance(data, str):
        with path.open("w", encoding="utf-8") as stream:
            stream.write(data)
    else:
        with path.open("wb") as stream:
            stream.write(data)


def is_special_file(path: Path) -> bool:
    """There, and neither a regular file nor a folder: a device, a pipe, a socket."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A name beside ``path``, private to this process and thread, renamed onto ``path`` when the block
    has written it (for writers that take a path: Parquet); removed if the block fails."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        yield temporary
        os.replace(temporary, path)
    except OSError as exc:  # say the path the caller asked for (`-o out/`), not a name it never gave, nor none
        said = exc.errno is not None and exc.strerror is not None
        if not said or (exc.filename is not None and os.fspath(exc.filename) != os.fspath(temporary)):
            raise
        raise type(exc)(exc.errno, exc.strerror, os.fspath(path)) from exc
    finally:
        temporary.unlink(missing_ok=True)
