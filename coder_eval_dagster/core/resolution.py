"""From files and options to the row-task x variant list a run executes.

Layer order, later wins: built-in defaults (the models), the base layer's
``defaults`` (``experiments/default.yaml`` in the current folder, when there
is one), the experiment's ``defaults``, the task file, the variant, then the
command line (``--type``, ``--model``, ``--driver``, ``-D``). A dataset is
expanded from the task's own block, so no variant can change it.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from .atif import is_atif, replay_trajectory
from .criteria import criterion_union, on_change
from .datasets import CLI_SAMPLE_SEED, Row, load_rows, null_placeholders, sample_rows, split_rows, substitute
from .files import MAX_DOCUMENT_BYTES, UnreadableFile, read_input_text, real_path, regular_file_problem
from .layout import CHECKPOINT_FILE, PLAN_FILE, RESULT_FILE, SANDBOX_DIR, is_runs_folder
from .models.agent import AgentConfig
from .models.base import MOVED_TO_RUN_LIMITS, RejectsMovedLimits, did_you_mean, file_name_problem
from .models.commands import HookCommand
from .models.dataset import Dataset
from .models.experiment import Experiment, PromptMutation, Variant
from .models.prices import ModelPrice
from .models.sandbox import REPO_FIRST, is_relative_local_path, unset_variables
from .models.sdk_options import unsettable
from .models.task import Task, gating_problems
from .models.trajectory import Trajectory
from .pricing import load_price_file
from .problems import (
    DOCUMENT,
    UNKNOWN_FIELD,
    InvalidInput,
    Loc,
    Problem,
    block_models,
    dotted,
    problems_from_validation,
)
from .repair import hidden_problems
from .row_commands import PLACEHOLDER
from .run_spec import EXPERIMENTS_DIR, RunSpec, available_experiments, experiment_candidates
from .yamlio import Document, key_not_text, load_document, load_yaml_text, parse_document

DEFAULT_VARIANT = "default"
T = TypeVar("T")
OVERRIDES = "-D"  # where a problem of a -D override is said to be: the command line, not a file
_criterion_adapter: list[TypeAdapter[Any]] = []  # built on first use, rebuilt when the registry changes


def criterion_adapter() -> TypeAdapter[Any]:
    if not _criterion_adapter:
        _criterion_adapter.append(TypeAdapter(criterion_union()))
    return _criterion_adapter[0]


on_change(_criterion_adapter.clear)


@dataclass(frozen=True)
class RowTask:
    """One unit of work: a (row-)task under one variant, run ``replicates`` times."""

    task_id: str
    base_task_id: str
    row_id: str | None
    row: dict[str, Any] | None
    variant_id: str
    replicates: int
    task: Task
    source: Path
    batch: int | None = None  # a sequential A/B's batch (from 1); None: not one, or beyond its max_rows
    # The folder a relative ``source`` is read from: the run's own when a resume or rescore is started elsewhere
    # (``source`` stays as the run recorded it); None: the current folder.
    read_from: Path | None = None
    # The task file's text as the resolution read it (task.json's source_yaml: the file the run evaluated, whatever
    # it says later); one str shared by the file's row-tasks, pickled once. None: a snapshot written before it.
    source_text: str | None = None

    @property
    def task_file(self) -> Path:
        """The task file, where this process reads it."""
        return self.source if self.read_from is None else self.read_from / self.source

    @property
    def task_dir(self) -> Path:
        return self.task_file.parent


@dataclass
class LoadedExperiment:
    doc: Document
    model: Experiment
    sandbox_steps: bool = True  # its defaults' pre_run, post_run and template_sources apply (see _experiment_layers)

    @property
    def task_paths(self) -> list[Path]:
        return [self.doc.path.parent / p for p in self.model.tasks]

    @property
    def defaults(self) -> dict[str, Any]:
        defaults = dict(self.doc.data.get("defaults") or {})
        if self.sandbox_steps:
            return defaults
        defaults = {k: v for k, v in defaults.items() if k not in SANDBOX_STEPS}
        if isinstance(defaults.get("sandbox"), dict):  # template sources written inside its sandbox block too
            defaults["sandbox"] = {k: v for k, v in defaults["sandbox"].items() if k != "template_sources"}
        return defaults


SANDBOX_STEPS = ("pre_run", "post_run", "template_sources")  # an experiment's defaults that shape the sandbox


@dataclass(frozen=True)
class SkippedTask:
    """A task file the run leaves out, and why (``skipped_tasks`` of run.json)."""

    path: str
    reason: str
    invalid: bool = False  # an invalid task file found in a folder: the run goes on without it, and fails
    task_id: str | None = None  # when the file was read (a task marked skip: true)

    @classmethod
    def of(cls, entry: SkippedTask | str) -> SkippedTask:
        """An entry of a snapshot; one written before entries had a path is a task id marked skip: true."""
        return entry if isinstance(entry, SkippedTask) else cls(entry, SKIP_TRUE)


SKIP_TRUE = "skip: true (--include-skipped runs it)"


@dataclass
class Resolution:
    row_tasks: list[RowTask] = field(default_factory=list)
    skipped: list[SkippedTask] = field(default_factory=list)
    experiment: LoadedExperiment | None = None
    problems: list[Problem] = field(default_factory=list)
    filtered: dict[str, int] = field(default_factory=dict)  # what the selection left out, by reason
    warnings: list[Problem] = field(default_factory=list)  # valid, but likely not what was meant (and notes)
    found_in_folders: set[str] = field(default_factory=set)  # task files reached through a folder argument
    problems_of: dict[str, list[Problem]] = field(default_factory=dict)  # a folder file's; in problems till left out
    prices: dict[str, ModelPrice] = field(default_factory=dict)  # the user's price file (--prices, the experiment's)
    _said: set[Problem] = field(default_factory=set, repr=False)  # what add_problems said
    _said_elsewhere: set[Problem] = field(default_factory=set, repr=False)  # ... for other than a folder's task file
    _met_in: dict[Problem, list[str]] = field(default_factory=dict, repr=False)  # a command-line problem's task files
    _invalid_files: set[str] = field(default_factory=set, repr=False)  # task files a problem was met in

    def left_out(self, reason: str, count: int) -> None:
        if count:
            self.filtered[reason] = self.filtered.get(reason, 0) + count

    def add_problems(
        self, problems: list[Problem], found_in_folder: str | None = None, task_file: str | None = None
    ) -> None:
        """``problems``, each said once: several task files share one in the experiment file (a variant's or the
        defaults' value), in a file they all name, or in a command-line value (said naming the ``task_file`` each
        is met in). ``found_in_folder``: the task file they are all of, found in a folder (the run may go on
        without it)."""
        if found_in_folder is not None:
            self.problems_of[found_in_folder] = problems
        else:
            self._said_elsewhere.update(problems)
        for problem in problems:
            if problem not in self._said:
                self._said.add(problem)
                self.problems.append(problem)
            if on_command_line(problem) and task_file is not None:
                self._met_in.setdefault(problem, []).append(task_file)
        if task_file is not None:
            self._invalid_files.add(task_file)

    def name_where_met(self) -> None:
        """A command-line problem met in some of the task files only (the value fits the others) names them: the
        option applies to every task, and what is left to fix is those files or the option. Called once every
        task file is resolved."""
        resolved = self._invalid_files | {str(rt.source) for rt in self.row_tasks} | {s.path for s in self.skipped}
        self.problems = [
            replace(p, message=p.message + _met_in(self._met_in[p]))
            if p in self._met_in and resolved - set(self._met_in[p])
            else p
            for p in self.problems
        ]

    def skip_invalid_folder_files(self) -> None:
        """A run over folders goes on without a task file found there that does not validate: its problems (those
        of a dataset or trajectory it names, and of its variants, included) become one ``skipped_tasks`` entry (the
        run then fails). Problems of files named directly stay (one a named file shares with it too), and so do
        those of a command-line value: the option is wrong, not the file (the run is refused)."""
        own = {path: [p for p in found if not on_command_line(p)] for path, found in self.problems_of.items()}
        left_out = {problem for found in own.values() for problem in found} - self._said_elsewhere
        self.problems = [problem for problem in self.problems if problem not in left_out]
        self.skipped.extend(
            SkippedTask(path, "; ".join(map(str, found)), invalid=True) for path, found in own.items() if found
        )
        self.problems_of = {}


# ----------------------------------------------------------------------------- files


def discover(paths: list[Path]) -> tuple[list[Path], list[Problem]]:
    """YAML files under the given paths (recursively), in a stable order."""
    files, problems, _ = _discover(paths)
    return files, problems


DATASET_SUFFIXES = (".jsonl", ".csv")  # named on the command line: a dataset's, never a task's


def _discover(paths: list[Path]) -> tuple[list[Path], list[Problem], set[Path]]:
    """``discover``, and which of the files were found in a folder rather than named."""
    files: list[Path] = []
    problems: list[Problem] = []
    in_folders: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found_files, unreadable = _yaml_files(path)
            listed = [_real_file(found) for found in found_files]
            problems += [
                Problem(folder, None, DOCUMENT, "cannot read folder: permission denied") for folder in unreadable
            ]
            files.extend(listed)
            in_folders.update(real_path(p) for p in listed)
        elif path.suffix.lower() in DATASET_SUFFIXES and path.is_file():
            why = "a dataset file, not a task: give the task file that names it (its rows are checked with it)"
            problems.append(Problem(str(path), None, DOCUMENT, why))
        elif path.is_file():
            files.append(_real_file(path))
        else:
            why = "not a regular file or folder" if path.exists() else "no such file or directory"
            problems.append(Problem(str(path), None, DOCUMENT, why))
    named = {real_path(path) for path in paths if path.is_file()}
    # one file reached through two spellings (tasks/x.yaml, experiments/../tasks/x.yaml) is read once
    unique = list({real_path(path): path for path in reversed(files)}.values())[::-1]
    return unique, problems, {p for p in unique if real_path(p) in in_folders - named}


def _yaml_files(folder: Path) -> tuple[list[Path], list[str]]:
    """The ``*.yaml`` and ``*.yml`` files under ``folder``, sorted, and the folders under it that could not be read
    (each a problem, as an unreadable file is). Linked folders are followed (each real folder once: a link back up
    is no loop); hidden files and folders (``.venv``, ``.dagster``) and what runs left (``is_run_output``) are passed
    over."""
    found: list[Path] = []
    seen: set[str] = set()
    unreadable: list[str] = []
    for top, folders, names in os.walk(folder, followlinks=True, onerror=lambda e: unreadable.append(str(e.filename))):
        seen.add(os.path.realpath(top))
        folders[:] = [
            name
            for name in folders
            if not name.startswith(".")
            and os.path.realpath(os.path.join(top, name)) not in seen
            and not is_run_output(Path(top, name))
        ]
        found += [Path(top, name) for name in names if name.endswith((".yaml", ".yml")) and not name.startswith(".")]
    return sorted(found), unreadable


def is_run_output(folder: Path) -> bool:
    """A run folder (its plan), an evaluation folder (its result or checkpoint beside its sandbox; ``evaluate``'s
    too) or a runs folder (its tables and index): a ``runs/`` inside a task folder holds sandboxes whose YAML files
    an evaluation wrote, never the user's tasks. A folder this process may not read is none of them: the walk says
    it cannot enter it (Path's checks raise there, Python 3.11)."""
    try:
        if (folder / PLAN_FILE).is_file():
            return True
        if (folder / SANDBOX_DIR).is_dir() and any((folder / n).is_file() for n in (RESULT_FILE, CHECKPOINT_FILE)):
            return True
        return is_runs_folder(folder)
    except PermissionError:
        return False


def _real_file(path: Path) -> Path:
    """A file reached through a symbolic link (itself or a folder on the way) is read where it really is: its
    relative paths (dataset, templates, prompt files) are relative to the real file's folder, where they live.
    Named from the current folder when it is under it."""
    real = Path(os.path.realpath(path))
    if real == Path(os.path.abspath(path)) or not real.exists():  # a broken link is named as written
        return path
    return real.relative_to(Path.cwd()) if real.is_relative_to(Path.cwd()) else real


def kind_of(doc: Document) -> str:
    """``experiment``, ``trajectory`` (a replay file, ours or ATIF), ``task``, or ``other``: a YAML file that is none
    of them (a mapping with neither task_id nor success_criteria, found in a folder, is skipped with a note)."""
    if isinstance(doc.data, dict):
        if "experiment_id" in doc.data or _unnamed_experiment(doc.data):
            return "experiment"
        if ("turns" in doc.data and "task_id" not in doc.data) or is_atif(doc.data):
            return "trajectory"
        if "task_id" in doc.data or "success_criteria" in doc.data:
            return "task"
    return "other"


def _unnamed_experiment(data: dict[str, Any]) -> bool:
    """An experiment that lacks its ``experiment_id``: its variants, and nothing of a task (a task has no variants)."""
    return "variants" in data and not {"task_id", "success_criteria"} & data.keys()


NOT_A_TASK = "not a task file (no task_id)"
BASE_LAYER = EXPERIMENTS_DIR / "default.yaml"  # under every task of a run, when the current folder has one


def experiment_names_tasks(path: Path) -> bool:
    """Whether the experiment names its own ``tasks`` (then no ``tasks/`` folder is added to them, as coder_eval
    takes it); one that cannot be read counts as naming them: its problems are said where it is resolved."""
    try:
        return bool(load_experiment(path).model.tasks)
    except (InvalidInput, OSError, ValueError):
        return True


def load_experiment(path: Path) -> LoadedExperiment:
    """An experiment file, its fields checked and the files it names found (relative to it): a problem of its own is
    said once, at its line, before any task is laid under it."""
    doc = load_document(path)
    _require_mapping(doc)
    _refuse_task_file(doc)
    model, problems = _collect(functools.partial(_experiment_model, doc))
    if model is None:  # in one pass: what its first problems stopped is checked on a repaired copy too
        raise InvalidInput([*problems, *hidden_problems(doc, problems, _experiment_problems)])
    return LoadedExperiment(doc, model)


def _refuse_task_file(doc: Document) -> None:
    """A task file given where an experiment belongs (``-e``) is said in one line, not as each of its fields
    unknown to an experiment (the mirror of a run refusing an experiment file among its paths)."""
    if kind_of(doc) == "task":
        key = "task_id" if "task_id" in doc.data else "success_criteria"
        raise InvalidInput([doc.problem_at((key,), "this is a task file, not an experiment: pass it without -e")])


def _experiment_model(doc: Document) -> Experiment:
    """The experiment's model; the files it names are found (made absolute in ``doc.data``) even when its fields
    are not all valid: their problems are said with the fields'."""
    try:
        model, problems = Experiment.model_validate(doc.data, context={"partial": True}), []
    except ValidationError as exc:
        model, problems = None, problems_from_validation(exc, doc.data, str(doc.path), doc.line_of, model=Experiment)
    data = doc.data if model is not None else copy.deepcopy(doc.data)  # (an invalid file's as written: it is repaired)
    problems += [doc.problem_at(loc, why) for loc, why in _absolutize_paths(data, doc.path.parent)]
    if model is None or problems:
        raise InvalidInput(problems)
    return model


def _experiment_problems(doc: Document) -> list[Problem]:
    return _collect(functools.partial(_experiment_model, doc))[1]


RELATIVE_TO_EXPERIMENT = "(relative to the experiment file)"
TASK_RELATIVE = "(relative to the task YAML)"  # a file the task's folder holds: said with the task it is met in


def _absolutize_paths(raw: dict[str, Any], base: Path) -> list[tuple[Loc, str]]:
    """Files an experiment names (template dirs, a local repo, prompt files) are relative to the experiment file:
    made absolute in ``raw``, so that no task's folder is searched for them. Returns where one
    is missing or unreadable, and why."""
    blocks: list[tuple[Loc, Any]] = [(("defaults",), raw.get("defaults"))]
    blocks += [(("variants", index), variant) for index, variant in enumerate(raw.get("variants") or [])]
    named: list[tuple[Loc, dict[str, Any], str, str]] = []  # (where, holder, key, file / folder / repo)
    for where, block in blocks:
        if not isinstance(block, dict):
            continue
        for at, holder in ((where, block), ((*where, "sandbox"), _mapping(block.get("sandbox")))):
            for index, source in enumerate(holder.get("template_sources") or []):
                loc: Loc = (*at, "template_sources", index)
                if isinstance(source, dict) and source.get("type") == "template_dir":
                    named.append(((*loc, "path"), source, "path", "folder"))
                elif isinstance(source, dict) and source.get("type") == "repo" and _is_local(source.get("url")):
                    named.append(((*loc, "url"), source, "url", "repo"))
        named.append(((*where, "initial_prompt_file"), block, "initial_prompt_file", "file"))
        # (an experiment's agent.trajectory and claude_settings stay the task's: CONTRACT 5 reads a trajectory
        # beside each task, so that one variant replays each task's own recorded session)
        named.append(
            ((*where, "agent", "system_prompt_file"), _mapping(block.get("agent")), "system_prompt_file", "file")
        )
    problems: list[tuple[Loc, str]] = []
    for loc, holder, key, kind in named:
        if isinstance(holder.get(key), str):
            written = os.path.expandvars(holder[key]) if kind == "folder" else holder[key]  # $VAR: set (validated)
            if unnamable := file_name_problem(written):
                problems.append((loc, unnamable))
                continue
            path = real_path(base / written)
            holder[key] = str(path)
            why = _named_file_problem(path, kind)
            if why is not None:
                problems.append((loc, f"{why} {RELATIVE_TO_EXPERIMENT}"))
    return problems


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _is_local(url: Any) -> bool:
    return isinstance(url, str) and is_relative_local_path(url)


def _named_file_problem(path: Path, kind: str) -> str | None:
    """Why a file (folder, local repo) an experiment names cannot be used (None: it can); what a prompt, trajectory
    or settings file holds is read with each task (a problem there is said once)."""
    if not path.exists():
        return f"{'file' if kind == 'file' else 'folder'} not found: {path}"
    if kind == "folder" and not path.is_dir():
        return f"not a folder: {path}"
    if kind == "file":
        why = regular_file_problem(path, MAX_DOCUMENT_BYTES)
        return None if why is None or str(path) in why else f"{why} ({path})"
    return None


def load_trajectory(path: Path, row: dict[str, Any] | None = None) -> Trajectory:
    """A replay trajectory file (the replay format, or ATIF) with ``row``'s ``${row.x}`` substituted first, so that
    a typed field may take a row's value (``cost_usd: ${row.cost}``); problems name the file, line and field."""
    doc = load_document(path)
    _require_mapping(doc)
    data = doc.data
    if row is not None:
        unknown: set[str] = set()
        data = substitute(data, Row("", row, ""), unknown)
        if unknown:
            raise InvalidInput(_unknown_in_trajectory(doc, unknown, sorted(row)))
    return replay_trajectory(data, str(path), doc.line_of)


def _unknown_in_trajectory(doc: Document, unknown: set[str], fields: list[str]) -> list[Problem]:
    """Where a trajectory names a row field the rows do not have (each placeholder, at its line and field)."""
    return [
        doc.problem_at(loc, f"unknown row field {name}{did_you_mean(name, fields)}")
        for loc, text in _placeholder_leaves(doc.data, ())
        for name in dict.fromkeys(match.group(1) for match in PLACEHOLDER.finditer(text))
        if name in unknown
    ]


def _holds_placeholders(path: Path) -> bool:
    """Whether a trajectory file waits for a row: its typed fields are checked with each row, not alone."""
    return PLACEHOLDER.search(path.read_text(encoding="utf-8", errors="replace")) is not None


def _require_mapping(doc: Document) -> None:
    if not isinstance(doc.data, dict):
        raise InvalidInput([Problem(str(doc.path), 1, DOCUMENT, "expected a YAML mapping at the top level")])


# ----------------------------------------------------------------------------- layering


def parse_override(text: str) -> tuple[Loc, Any]:
    """``key.path=value`` with the value read as YAML (``30`` is an int, ``false`` a bool, nothing null: coder_eval's
    ``-D run_limits.max_turns=`` clears the cap)."""
    key, sep, value = text.partition("=")
    parts = [p for p in key.strip().split(".")]
    if not sep or not key.strip() or any(not p for p in parts):
        raise InvalidInput([Problem(OVERRIDES, None, key.strip() or text, f"expected key.path=value, got {text!r}")])
    try:
        parsed = load_yaml_text(value) if value.strip() else None
    except yaml.YAMLError as exc:
        why = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        message = f"value {value!r} is not valid YAML ({why}); quote it to pass it as text: -D '{key}=\"...\"'"
        raise InvalidInput([Problem(OVERRIDES, None, key, message)]) from None
    if not_text := key_not_text(parsed):
        raise InvalidInput([Problem(OVERRIDES, None, key, not_text)])
    return tuple(int(p) if p.isdigit() else p for p in parts), parsed


def deep_merge(base: Any, over: Any) -> Any:
    """Mappings merge key by key; anything else is replaced by ``over``."""
    if isinstance(base, dict) and isinstance(over, dict):
        merged = dict(base)
        for key, value in over.items():
            merged[key] = deep_merge(base[key], value) if key in base else value
        return merged
    return over


def _set_path(data: dict[str, Any], loc: Loc, value: Any) -> None:
    target: Any = data
    for part in loc[:-1]:
        if isinstance(target, list) and isinstance(part, int) and part < len(target):
            target = target[part]
        elif isinstance(target, dict):
            if not isinstance(target.get(part), (dict, list)):
                target[part] = {}
            target = target[part]
        else:
            raise InvalidInput([Problem(OVERRIDES, None, dotted(loc), "path does not exist in the task")])
    last = loc[-1]
    settable = (isinstance(target, list) and isinstance(last, int) and last < len(target)) or isinstance(target, dict)
    if not settable:
        raise InvalidInput([Problem(OVERRIDES, None, dotted(loc), "path does not exist in the task")])
    current = target.get(last) if isinstance(target, dict) else target[last]
    target[last] = deep_merge(current, value)  # a mapping merges per key: -D 'run_limits={turn_timeout: 12}'


def _merge_layer(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``deep_merge``, where an agent block setting one of system_prompt / system_prompt_file drops the other."""
    merged: dict[str, Any] = deep_merge(base, over)
    agent = over.get("agent")
    if isinstance(agent, dict) and isinstance(merged.get("agent"), dict):
        for name, other in (("system_prompt", "system_prompt_file"), ("system_prompt_file", "system_prompt")):
            if name in agent and other not in agent:
                merged["agent"].pop(other, None)
    return merged


def _with_driver(block: dict[str, Any], driver: Any) -> dict[str, Any]:
    """``block`` with ``sandbox.driver`` set (an experiment's or variant's ``driver:`` key)."""
    return {**block, "sandbox": {**(block.get("sandbox") or {}), "driver": driver}} if driver else block


OVERLAY_ONLY = ("repeats", "driver", "prompt_mutations")  # read by resolution, never merged into the task


NULL_IS_UNSET = ("agent", "run_limits")  # blocks coder_eval reads as not set when they hold nothing


def without_empty_blocks(task_raw: dict[str, Any]) -> dict[str, Any]:
    """The task (or an experiment's defaults or variant) without the blocks written with no value (``agent:`` whose
    lines are all commented out): coder_eval reads ``agent``, ``run_limits`` and ``sandbox.template_sources`` so
    as not set, which leaves them to the layer below, where a null would have replaced those."""
    raw = {k: v for k, v in task_raw.items() if not (k in NULL_IS_UNSET and v is None)}
    sandbox = raw.get("sandbox")
    if isinstance(sandbox, dict) and "template_sources" in sandbox and sandbox["template_sources"] is None:
        raw["sandbox"] = {k: v for k, v in sandbox.items() if k != "template_sources"}
    return raw


def layer(
    task_raw: dict[str, Any],
    defaults: list[dict[str, Any]],
    variant_raw: dict[str, Any] | None,
    overrides: list[tuple[Loc, Any]],
) -> dict[str, Any]:
    """The merged raw task dict for one variant; ``defaults`` are the experiments' defaults, the base layer first."""
    task_raw = without_empty_blocks(task_raw)
    under: dict[str, Any] = {}
    pre: list[Any] = []
    post: list[Any] = []
    sources: list[Any] = []  # the defaults' template sources: after the task's own, before the variant's (coder_eval)
    for block in copy.deepcopy(defaults):
        pre += block.pop("pre_run", None) or []
        post = (block.pop("post_run", None) or []) + post
        sources += block.pop("template_sources", None) or []
        driver = block.get("driver")
        kept = {k: v for k, v in without_empty_blocks(block).items() if k not in OVERLAY_ONLY}
        under = _merge_layer(under, _with_driver(kept, driver))
    merged = _merge_layer(under, copy.deepcopy(task_raw))
    if pre:
        merged["pre_run"] = [*pre, *(merged.get("pre_run") or [])]
    if post:
        merged["post_run"] = [*(merged.get("post_run") or []), *post]
    if sources:
        _append_sources(merged, sources)
    if variant_raw:
        overlay: dict[str, Any] = {
            k: v for k, v in without_empty_blocks(variant_raw).items() if k in ("agent", "sandbox", "run_limits")
        }
        merged = _merge_layer(merged, _with_driver(copy.deepcopy(overlay), variant_raw.get("driver")))
        if variant_raw.get("template_sources"):
            _append_sources(merged, variant_raw["template_sources"])
        for shallow in ("simulation", "checker_context"):  # merged key by key over the task's
            if variant_raw.get(shallow):
                merged[shallow] = {**(merged.get(shallow) or {}), **variant_raw[shallow]}
    for loc, value in overrides:
        _set_path(merged, loc, copy.deepcopy(value))
    return merged


def _append_sources(merged: dict[str, Any], sources: list[Any]) -> None:
    sandbox = merged.setdefault("sandbox", {}) or {}
    merged["sandbox"] = sandbox
    sandbox["template_sources"] = [*(sandbox.get("template_sources") or []), *copy.deepcopy(sources)]


# ----------------------------------------------------------------------------- resolution


def resolve(
    spec: RunSpec, base_layer: bool = True, experiment_tasks: bool = True, started_in: Path = Path()
) -> Resolution:
    """Resolve everything the spec selects; problems are collected, not raised. ``base_layer`` False leaves
    ``experiments/default.yaml`` out (grading a directory resolves no experiment, as coder_eval's does not);
    ``experiment_tasks`` False leaves out the tasks the experiment names (validating one file under it);
    ``started_in``: the folder whose base layer applies (a rescore's: where its run was started)."""
    result = Resolution()
    try:
        overrides = _overrides(spec)
        layers = _experiment_layers(spec, started_in / BASE_LAYER if base_layer else None)
        result.prices = _price_file(spec, layers)
    except InvalidInput as exc:
        result.add_problems(exc.problems)
        return result
    result.experiment = layers[-1] if layers else None
    own: list[Path] = []
    if result.experiment and spec.experiment and experiment_tasks:
        own, missing = _experiment_tasks(result.experiment)
        result.add_problems(missing)
    files, problems, in_folders = _discover(own + [Path(p) for p in spec.task_paths])
    result.add_problems(problems)
    result.found_in_folders = {str(path) for path in in_folders}
    seen_ids: dict[str, Path] = {}
    for path in files:
        try:
            _resolve_file(path, spec, overrides, layers, result, seen_ids)
        except InvalidInput as exc:  # a problem found resolving a file is that file's, wherever it lies
            in_folder = str(path) if str(path) in result.found_in_folders else None
            result.add_problems(exc.problems, in_folder, str(path))
    result.name_where_met()
    flags = _given_by_flag(spec)
    result.problems = [_said_by_its_option(problem, flags) for problem in result.problems]
    _select(result, spec)
    _plan_batches(result)
    return result


def _experiment_tasks(experiment: LoadedExperiment) -> tuple[list[Path], list[Problem]]:
    """The task files and folders an experiment names; one that is not there is the experiment's problem, at its
    line in the experiment file."""
    found: list[Path] = []
    problems: list[Problem] = []
    for index, path in enumerate(experiment.task_paths):
        where: Loc = ("tasks", index)
        if unnamable := file_name_problem(str(path)):
            problems.append(experiment.doc.problem_at(where, unnamable))
        elif path.exists():
            found.append(path)
        else:
            problems.append(experiment.doc.problem_at(where, f"no such file or directory: {_normalized(path)}"))
    return found, problems


def _normalized(path: Path) -> Path:
    """``path`` without its ``..`` and links, from the current folder when it is under it."""
    real = real_path(path)
    return real.relative_to(Path.cwd()) if real.is_relative_to(Path.cwd()) else real


BEYOND_MAX_ROWS = "beyond sequential.max_rows"


def _plan_batches(result: Resolution) -> None:
    """A sequential experiment's rows in seeded batches; rows beyond its ``max_rows`` are never started."""
    settings = result.experiment.model.sequential if result.experiment else None
    if settings is None or not result.row_tasks:
        return
    from .compare.sequential import plan_batches  # numpy: only a sequential run pays for it

    row_ids = [rt.task_id for rt in result.row_tasks]
    plan = plan_batches(row_ids, settings.seed, settings.batch_rows, settings.min_rows, settings.max_rows)
    batch_of = {row_id: number for number, batch in enumerate(plan.batches, 1) for row_id in batch}
    result.row_tasks = [replace(rt, batch=batch_of[rt.task_id]) for rt in result.row_tasks if rt.task_id in batch_of]
    result.left_out(BEYOND_MAX_ROWS, len(plan.beyond_max_rows))


def _experiment_layers(spec: RunSpec, base_layer: Path | None) -> list[LoadedExperiment]:
    """The base layer (``base_layer``: ``experiments/default.yaml`` of the run's folder, when there is one), then
    the ``-e`` experiment.

    The last one's variants and repeats are the run's: the base layer's own,
    when no experiment is given; under one, only its ``defaults`` apply, and
    of those not its pre_run, post_run and template_sources: coder_eval takes
    those from the run's experiment only (its packaged default's cleanup
    does not run under ``-e``).
    """
    layers = [load_experiment(base_layer)] if base_layer is not None and base_layer.is_file() else []
    if spec.experiment is not None:
        path = Path(spec.experiment)
        if not path.exists():
            raise InvalidInput([Problem(spec.experiment, None, DOCUMENT, missing_experiment(spec.experiment))])
        if not layers or base_layer is None or real_path(path) != real_path(base_layer):
            layers = [replace(layer, sandbox_steps=False) for layer in layers]
            layers.append(load_experiment(path))
    return layers


def missing_experiment(given: str) -> str:
    """What was looked for and the experiments the current folder has, as coder_eval's error lists them. A path
    (with a ``/``) is said as given, a file name without the second suffix it was also tried with."""
    candidates = [] if "/" in given else experiment_candidates(given)
    looked = [str(path) for path in candidates if not path.stem.endswith((".yaml", ".yml"))]
    tried = f"nor {_listed(looked, 'or')}; " if looked else ""
    available = available_experiments()
    listed = f"experiments here: {', '.join(available)}" if available else f"no experiment in {EXPERIMENTS_DIR}/"
    return f"no such experiment file ({tried}{listed})"


def _listed(names: list[str], word: str) -> str:
    """``a``, ``a or b``, ``a, b or c`` (``word``: or, and)."""
    return f" {word} ".join(filter(None, [", ".join(names[:-1]), names[-1]]))


def _met_in(task_files: list[str]) -> str:
    """`` (in a.yaml and b.yaml)``: the task files a command-line problem is met in (the first few of many)."""
    if not task_files:
        return ""
    most = 3
    shown = task_files if len(task_files) <= most else [*task_files[:most], f"{len(task_files) - most} more"]
    return f" (in {_listed(shown, 'and')})"


def _price_file(spec: RunSpec, layers: list[LoadedExperiment]) -> dict[str, ModelPrice]:
    """``--prices FILE``, else the price file the last experiment layer naming one names (relative to it)."""
    named = [layer.doc.path.parent / layer.model.prices for layer in layers if layer.model.prices]
    path = Path(spec.prices) if spec.prices else (named[-1] if named else None)
    if path is None:
        return {}
    if not path.is_file():
        raise InvalidInput([Problem(str(path), None, DOCUMENT, "no such price file")])
    return load_price_file(path)


def _select(result: Resolution, spec: RunSpec) -> None:
    """``--task`` globs, then ``--limit`` (the first N row-tasks, in resolution order, each under every variant).

    A RowTask is one row-task under one variant: the counts and the limit are of row-tasks (task ids)."""
    if spec.task_patterns:
        kept = [rt for rt in result.row_tasks if any(fnmatch.fnmatchcase(rt.task_id, p) for p in spec.task_patterns)]
        left = _row_task_ids(result.row_tasks) - _row_task_ids(kept)
        hint = _rows_hint(result.row_tasks, spec.task_patterns)
        result.left_out("row-tasks not matching --task " + " ".join(spec.task_patterns) + hint, len(left))
        result.row_tasks = kept
    if spec.limit is not None:
        ids = list(dict.fromkeys(rt.task_id for rt in result.row_tasks))
        result.left_out(f"row-tasks beyond --limit {spec.limit}", max(0, len(ids) - spec.limit))
        first = set(ids[: spec.limit])
        result.row_tasks = [rt for rt in result.row_tasks if rt.task_id in first]


def _rows_hint(row_tasks: list[RowTask], patterns: list[str]) -> str:
    """How to select a dataset task's rows, for a ``--task`` pattern that is the task's own id: its row-tasks are
    ``<task_id>/<row_id>``, and the id alone matches none of them."""
    datasets = {rt.base_task_id for rt in row_tasks if rt.row_id is not None}
    named = [pattern for pattern in patterns if pattern in datasets]
    return "".join(f"; --task '{pattern}/*' selects its rows" for pattern in named)


def selection_counts(row_tasks: list[RowTask]) -> dict[str, int]:
    """``row_tasks`` (a row-task under two variants is one) and ``variants``, counted apart, as ``register``
    prints them."""
    return {"row_tasks": len(_row_task_ids(row_tasks)), "variants": len({rt.variant_id for rt in row_tasks})}


def definitions_metadata(given: list[str], row_tasks: list[RowTask], skipped: list[SkippedTask]) -> dict[str, Any]:
    """task_definitions' metadata of a selection, the same for a run (its snapshot) and ``register`` (its
    resolution): the counts, and the task paths read: those ``given``, then each task file read beyond them (what
    an experiment's ``tasks`` names)."""
    roots = [Path(os.path.abspath(path)) for path in given]
    read = dict.fromkeys([*(str(rt.source) for rt in row_tasks), *(entry.path for entry in skipped)])
    beyond = [path for path in read if not any(Path(os.path.abspath(path)).is_relative_to(root) for root in roots)]
    return {**selection_counts(row_tasks), "skipped": len(skipped), "task_paths": ", ".join([*given, *beyond])}


def _row_task_ids(row_tasks: list[RowTask]) -> set[str]:
    return {rt.task_id for rt in row_tasks}


def _shorthands(spec: RunSpec) -> list[tuple[Loc, str]]:
    """The values --type, --model and --driver give, where each goes."""
    given = (
        (("agent", "type"), spec.agent_type),
        (("agent", "model"), spec.model),
        (("sandbox", "driver"), spec.driver),
    )
    return [(loc, value) for loc, value in given if value]


def _overrides(spec: RunSpec) -> list[tuple[Loc, Any]]:
    """The command line's changes to every task: --type, --model, --driver, then each -D."""
    overrides: list[tuple[Loc, Any]] = list(_shorthands(spec))
    parsed = [parse_override(text) for text in spec.overrides]
    problems = [p for loc, _ in parsed if (p := _unknown_override(loc)) is not None]
    given_twice = {loc for loc, _ in overrides} & {loc for loc, _ in parsed}
    problems += [
        Problem(OVERRIDES, None, dotted(loc), f"also given by its own option ({SHORTHAND_FLAGS[loc]}); give it once")
        for loc in sorted(given_twice, key=str)
    ]
    if problems:
        raise InvalidInput(problems)
    return overrides + parsed


SDK_OPTIONS: Loc = ("agent", "sdk_options")
SHORTHAND_FLAGS: dict[Loc, str] = {
    ("agent", "type"): "--type",
    ("agent", "model"): "--model",
    ("sandbox", "driver"): "--driver",
}


def _unknown_override(loc: Loc) -> Problem | None:
    """A -D path naming no field of the task format, or no option the agent SDK takes: one problem for the option,
    not one per file."""
    if loc[:2] == SDK_OPTIONS and len(loc) > 2 and (why := unsettable(str(loc[2]))) is not None:
        return Problem(OVERRIDES, None, dotted(loc[:3]), why)
    for position, part in enumerate(loc):
        if isinstance(part, int):
            continue
        models = block_models(Task, None, loc[:position])
        if not models:
            return None  # a free-form value (a dict, sdk_options...): any key may be set
        fields = {name for model in models for name in model.model_fields}
        if part not in fields:
            key = ".".join(map(str, loc[: position + 1]))
            if part in MOVED_TO_RUN_LIMITS and any(issubclass(model, RejectsMovedLimits) for model in models):
                moved = MOVED_TO_RUN_LIMITS[str(part)]  # the message a file gets for the same key
                return Problem(
                    OVERRIDES, None, key, f"no longer supported here; it lives under {moved} (-D {moved}=...)"
                )
            return Problem(OVERRIDES, None, key, f"no such field in the task format{did_you_mean(str(part), fields)}")
    return None


class _NoRowInSplit(InvalidInput):
    """A labelled dataset with no row in the ``--split``: the selector is wrong, not the file (it applies to every
    task of the run), so the run is refused, as coder_eval's SplitSelectorError refuses it: skipped, a mistyped
    split left a green run of the other tasks."""


def _resolve_file(
    path: Path,
    spec: RunSpec,
    overrides: list[tuple[Loc, Any]],
    layers: list[LoadedExperiment],
    result: Resolution,
    seen_ids: dict[str, Path],
) -> None:
    """``_resolve_document`` of the file; its problems in one pass: what they stopped (an unknown key stops the
    rules between fields, the folders and rows the task names) is checked on a repaired copy too. A file the
    command-line values bring about (the file without them has none such) is the options', not the file's."""
    doc, text = _read_task_file(path)
    try:
        _resolve_document(doc, spec, overrides, layers, result, seen_ids, text)
    except InvalidInput as exc:
        problems = _in_one_pass(doc, exc.problems, spec, overrides, layers, seen_ids)
        if overrides and any(problem.path == str(path) for problem in problems):
            without = {(p.field, p.message) for p in _in_one_pass(doc, None, spec, [], layers, seen_ids)}
            problems = [
                _caused_by_options(p, path, spec) if (p.field, p.message) not in without else p for p in problems
            ]
        raise InvalidInput(problems) from None


def _in_one_pass(
    doc: Document,
    said: list[Problem] | None,
    spec: RunSpec,
    overrides: list[tuple[Loc, Any]],
    layers: list[LoadedExperiment],
    seen_ids: dict[str, Path],
) -> list[Problem]:
    """The file's problems under ``overrides`` (``said``, when already found) and what they stopped, found on a
    repaired copy."""
    copy_of = functools.partial(_copy_problems, kind_of(doc), spec, overrides, layers, seen_ids)
    said = copy_of(doc) if said is None else said
    return [*said, *hidden_problems(doc, said, copy_of)]


def _caused_by_options(problem: Problem, path: Path, spec: RunSpec) -> Problem:
    """A problem the command-line values bring about in the task file ``path`` (the file without them has none such):
    the options',
    said once for the run (:meth:`Resolution.add_problems` names the files it is met in), naming the options given.
    One elsewhere stays where it is (a value's own, said so already; one in a file a value names, at its line)."""
    if problem.path != str(path):
        return problem
    given = _given_options(spec)
    said_at = given[0].split()[0] if len(given) == 1 else OVERRIDES  # the one option given, else the -D family
    return Problem(said_at, None, problem.field, f"{problem.message} (with {' '.join(given)})")


def _given_options(spec: RunSpec) -> list[str]:
    """The command line's changes to every task as they were given: ``--type replay``, ``-D agent.model=m``."""
    shorthands = [f"{SHORTHAND_FLAGS[loc]} {value}" for loc, value in _shorthands(spec)]
    return shorthands + [f"-D {text}" for text in spec.overrides]


def on_command_line(problem: Problem) -> bool:
    """Whether ``problem`` is an option's (``-D``, ``--type``...), not a file's."""
    return problem.path == OVERRIDES or problem.path in SHORTHAND_FLAGS.values()


def _given_by_flag(spec: RunSpec) -> dict[str, str]:
    """The keys --type, --model or --driver gave a value that no -D lays a value over or under (``agent.type``:
    ``--type``), to say a problem of theirs as the flag's."""
    set_by_d = [parse_override(text)[0] for text in spec.overrides]
    return {
        dotted(loc): SHORTHAND_FLAGS[loc]
        for loc, _ in _shorthands(spec)
        if not any(loc[: len(other)] == other or other[: len(loc)] == loc for other in set_by_d)
    }


def _said_by_its_option(problem: Problem, flags: dict[str, str]) -> Problem:
    """A problem of a value --type, --model or --driver gave is said as that option's (it was -D's: the value is
    laid over the task as a -D's is)."""
    if problem.path != OVERRIDES:
        return problem
    for key, flag in flags.items():
        if problem.field == key or problem.field.startswith(key + "."):
            return replace(problem, path=flag)
    return problem


def _read_task_file(path: Path) -> tuple[Document, str | None]:
    """The file parsed, and its text as ``Path.read_text`` gives it (universal newlines): the one read of a task
    file a run makes. A file that cannot be read is said as any document's problem (``load_document``)."""
    try:
        text = read_input_text(path, MAX_DOCUMENT_BYTES)
    except (OSError, UnreadableFile, UnicodeDecodeError):
        return load_document(path), None  # raises, naming why (None: readable after all, read when recorded)
    return parse_document(path, text), text.replace("\r\n", "\n").replace("\r", "\n")


def _copy_problems(
    kind: str,
    spec: RunSpec,
    overrides: list[tuple[Loc, Any]],
    layers: list[LoadedExperiment],
    seen_ids: dict[str, Path],
    doc: Document,
) -> list[Problem]:
    """The problems of resolving ``doc``, the run left as it was: a repaired copy of a task file (none when the
    repair made it another kind of file), or the file under other ``overrides``."""
    if kind_of(doc) != kind:
        return []
    scratch = Resolution()
    resolve_copy = functools.partial(_resolve_document, doc, spec, overrides, layers, scratch, dict(seen_ids))
    return [*scratch.problems, *_collect(resolve_copy)[1]]


def _resolve_document(
    doc: Document,
    spec: RunSpec,
    overrides: list[tuple[Loc, Any]],
    layers: list[LoadedExperiment],
    result: Resolution,
    seen_ids: dict[str, Path],
    source_text: str | None = None,
) -> None:
    path = doc.path
    if not _is_task(doc, path, result, layers):
        return
    base = layer(doc.data, [experiment.defaults for experiment in layers], None, overrides)  # under no variant
    if _quarantined(base, spec):
        _quarantine(doc, base, overrides, result, path)
        return
    try:
        rows, problems = _dataset_rows(base, doc, spec, result.warnings), []  # the task's own block: no variant's
    except _NoRowInSplit as exc:
        result.add_problems(exc.problems)  # the run's, even for a task file found in a folder
        return
    except InvalidInput as exc:  # said once: what stands on the rows is not checked without them
        rows, problems = None, [_mark_override(problem, overrides, doc) for problem in exc.problems]
    file = _TaskFile(doc, overrides, layers, base, rows, unread=bool(problems), problems=problems)
    tasks = [valid for under in file.variants() if (valid := file.validated(under)) is not None]
    left_out = _tags_left_out(tasks[0][1], spec) if tasks else None
    expanded = [(under, task, *file.expanded(under, task)) for under, task in tasks] if left_out is None else []
    if file.problems:  # each once, in order: deduplicated here, not searched at each add (quadratic)
        raise InvalidInput(
            list(dict.fromkeys([*file.problems, *_duplicate_id_problems(base.get("task_id"), doc, seen_ids)]))
        )
    _check_unique_id(tasks[0][1].task_id, path, doc, seen_ids)
    if left_out is not None:
        result.left_out(left_out, 1)
    for under, task, agent, expansions in expanded:
        repeats = _repeats(under.variant, layers, spec)
        warnings = file.blamed(
            [
                *_criterion_warnings(task, expansions, doc),
                *filter(
                    None,
                    [
                        _trials_warning(task, doc, repeats),
                        _input_budget_warning(task, agent, doc),
                        _model_of_another_type_warning(agent, doc, overrides),
                    ],
                ),
            ],
            under,
        )
        result.warnings.extend(w for w in [*warnings, *file.warnings] if w not in result.warnings)
        for row, update in expansions:
            result.row_tasks.append(
                RowTask(
                    f"{task.task_id}/{row.row_id}" if row else task.task_id,
                    task.task_id,
                    row.row_id if row else None,
                    row.values if row else None,
                    under.variant.variant_id,
                    _replicates(task, repeats[0]),
                    task.model_copy(update={"initial_prompt_file": None, "agent": _row_agent(agent, row), **update}),
                    path,
                    source_text=source_text,
                )
            )


def _is_task(doc: Document, path: Path, result: Resolution, layers: list[LoadedExperiment]) -> bool:
    """Whether ``doc`` is a task file to resolve. A trajectory is checked on its own (unless it waits for a row);
    an experiment file, or another YAML file found in a folder, is passed over with a note (none for one the run
    already lays under its tasks: the base layer, the ``-e`` experiment); one named is refused."""
    kind = kind_of(doc)
    in_folder = str(path) in result.found_in_folders
    if kind == "trajectory":
        if not _holds_placeholders(path):
            load_trajectory(path)
        return False
    if in_folder and kind == "experiment" and real_path(path) in {real_path(layer.doc.path) for layer in layers}:
        return False
    if kind == "experiment" or (kind == "other" and in_folder):
        what = "an experiment file (pass it with -e)" if kind == "experiment" else NOT_A_TASK
        if in_folder:
            result.warnings.append(Problem(str(path), None, DOCUMENT, f"note: skipped, {what}"))
            return False
        key = "experiment_id" if "experiment_id" in doc.data else "variants"
        raise InvalidInput([doc.problem_at((key,), "this is an experiment file; pass it with -e")])
    _require_mapping(doc)
    return True


_BOOL: TypeAdapter[bool] = TypeAdapter(bool)


def _quarantined(task: dict[str, Any], spec: RunSpec) -> bool:
    """``skip: true`` without ``--include-skipped``, known before the dataset is read: the guide's skipped task
    never reaches the orchestrator (no dataset fan-out, no variant resolution)."""
    if spec.include_skipped:
        return False
    try:
        return _BOOL.validate_python(task.get("skip", False))
    except ValidationError:
        return False  # the task's validation says what is wrong with it


def _quarantine(
    doc: Document, task: dict[str, Any], overrides: list[tuple[Loc, Any]], result: Resolution, path: Path
) -> None:
    """A parked task: checked as a task file (its fields) but not the files it names, which may be what it waits for
    (a dataset not there yet); recorded in ``skipped_tasks``. Its id is claimed by no one: an old version parked
    beside its replacement is what ``skip`` is for (coder_eval checks the ids of the tasks it resolves only)."""
    model, problems = _collect(functools.partial(_task_model, doc, task, overrides, {}))
    problems = [problem for problem in problems if not _stands_on_rows(problem, task)]
    if problems:
        raise InvalidInput(problems)
    result.skipped.append(SkippedTask(str(path), SKIP_TRUE, task_id=model.task_id if model is not None else None))


# The prompt before the experiment's mutations, the mutations, and which of them hold a ``${row.x}`` (filled per row).
Mutated = tuple[str, tuple[PromptMutation, ...], tuple[bool, ...]]


@dataclass(frozen=True)
class _UnderVariant:
    """A task file laid under one variant (``raw``: the variant as written; None without an experiment)."""

    index: int
    variant: Variant
    raw: dict[str, Any] | None
    merged: dict[str, Any]
    # The prompt before the experiment's mutations, and the mutations: each row's filled prompt takes them (so that
    # a replace sees the row's text, as coder_eval applies them after the rows); None: no mutation applies.
    mutated: Mutated | None = None


@dataclass
class _TaskFile:
    """One task file resolved under each variant, its problems gathered in one pass: a variant's, or one its values
    cause in the task's own, is said at the variant's line in the experiment file."""

    doc: Document
    overrides: list[tuple[Loc, Any]]
    layers: list[LoadedExperiment]
    base: dict[str, Any]  # under the defaults and the command line, no variant
    rows: list[Row] | None
    unread: bool  # the dataset could not be read: what stands on its rows is not judged
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    _expansions: dict[tuple[str | None, str | None, str], tuple[list[Expansion], list[Problem]]] = field(
        default_factory=dict
    )

    def variants(self) -> list[_UnderVariant]:
        """The task laid under each variant of the run (the one ``default`` without an experiment)."""
        defaults = [experiment.defaults for experiment in self.layers]
        return [
            _UnderVariant(index, variant, raw, layer(self.doc.data, defaults, raw, self.overrides))
            for index, variant, raw in _variants(self.layers[-1] if self.layers else None)
        ]

    def validated(self, under: _UnderVariant) -> tuple[_UnderVariant, Task] | None:
        """The task under the variant, or None (its problems added)."""
        merged = under.merged
        mutated, found = _collect(
            functools.partial(_apply_prompt, merged, under.variant, under.index, self.layers, self.doc)
        )
        under = replace(under, mutated=mutated)
        has_rows = self.rows is not None or self.unread
        found += _collect(functools.partial(_check_placeholders, [merged], self.doc, has_rows))[1]
        task, invalid = _collect(functools.partial(_validate_task, self.doc, merged, self.overrides, self._first_row))
        if self.unread:
            invalid = [problem for problem in invalid if not _stands_on_rows(problem, merged)]
        if task is not None:
            found += _collect(functools.partial(_check_trajectory_fields, task, self.doc, self.rows))[1]
        self._add(self.blamed(found, under) + self.blamed(invalid, under, self._caused_by_variant))
        return (under, task) if task is not None and not found else None

    def expanded(self, under: _UnderVariant, task: Task) -> tuple[AgentConfig, list[Expansion]]:
        """The agent block as it runs and the (row, filled-in fields) of the task under the variant; their problems
        and warnings added."""
        prompt = (task.initial_prompt, task.initial_prompt_file, repr(under.mutated))
        if prompt not in self._expansions:  # by prompt: the variants that keep the task's share it
            expand = functools.partial(_expand_rows, task, self.base, self.rows, self.doc, under.mutated, self.unread)
            expansions, found = _collect(expand)
            self._expansions[prompt] = (expansions or [], found)
        expansions, found = self._expansions[prompt]
        has_rows = self.rows is not None or self.unread
        files, problems = _collect(functools.partial(_agent_files, task, self.doc, has_rows))
        self._add(self.blamed(found + problems, under))
        agent, warnings = files or (task.agent, [])
        self.warnings.extend(w for w in self.blamed(warnings, under) if w not in self.warnings)
        return agent, expansions

    def blamed(
        self, problems: list[Problem], under: _UnderVariant, caused: Callable[[Problem], bool] | None = None
    ) -> list[Problem]:
        """``_blame_variant`` of each problem, then ``_blame_defaults`` of one still the task's (none without an
        experiment)."""
        if not self.layers:
            return problems
        experiment = self.layers[-1].doc
        if under.raw:
            problems = [_blame_variant(p, under.raw, under.index, under.merged, experiment, caused) for p in problems]
        return [self._blame_defaults(p) if p.path == str(self.doc.path) else p for p in problems]

    def _blame_defaults(self, problem: Problem) -> Problem:
        """A problem in a value an experiment's ``defaults`` laid under the task (the task, a variant and the command
        line left it so) is the experiment file's, at that line of its defaults, naming the task it is met in."""
        parts = problem.field.split(".")
        own = self._own_pre_run(parts)
        if own is not None:  # the task's own entry, numbered in its file (the layers' come before it in the run)
            return Problem(problem.path, self.doc.line_of(own), dotted(own), problem.message)
        origin = None if _set_by_override(parts, self.overrides) else self._set_by_defaults(parts)
        if origin is None:
            return problem
        experiment, loc, before = origin
        where: Loc = ("defaults", *loc)
        message = problem.message.replace(TASK_RELATIVE, f"(relative to the task YAML {problem.path})")
        if message == REPO_FIRST:
            message = _after_the_tasks(False, problem.path, before)
        else:
            message += f" (under the task {problem.path})"
        return experiment.problem_at(where, message)

    def _own_pre_run(self, parts: list[str]) -> Loc | None:
        """Where in the task file a run's ``pre_run`` entry ``parts`` is, when it is the task's own and the layers'
        entries come before it (None: another field, or a layer's entry)."""
        if parts[0] != "pre_run" or len(parts) < 2 or not parts[1].isdigit():
            return None
        before = sum(len(experiment.defaults.get("pre_run") or []) for experiment in self.layers)
        at = int(parts[1]) - before
        return ("pre_run", at, *parts[2:]) if before and at >= 0 else None

    def _set_by_defaults(self, parts: list[str]) -> tuple[Document, Loc, int] | None:
        """The experiment layer whose ``defaults`` set the task's field ``parts`` (None: the task's own, or no layer
        sets it): its file, the field's place in its defaults, and (a template source) how many sources come
        before it."""
        index = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None
        if parts[:2] == ["sandbox", "template_sources"] and index is not None:
            counts = [len(experiment.defaults.get("template_sources") or []) for experiment in self.layers]
            sources = (self.base.get("sandbox") or {}).get("template_sources") or []
            start = len(sources) - sum(counts)  # the defaults' come after the task's own, in layer order
            for experiment, count in zip(self.layers, counts, strict=True):
                if start <= index < start + count:
                    return experiment.doc, ("template_sources", index - start, *parts[3:]), start
                start += count
        elif parts[0] in ("pre_run", "post_run") and len(parts) > 1 and parts[1].isdigit():
            hooks: list[tuple[Document | None, list[Any]]] = [
                (experiment.doc, experiment.defaults.get(parts[0]) or []) for experiment in self.layers
            ]
            if parts[0] == "post_run":  # the task's own first, then the last layer's ... the first's
                hooks = [(None, self.doc.data.get("post_run") or []), *reversed(hooks)]
            at = int(parts[1])
            for doc, listed in hooks:
                if at < len(listed):
                    return None if doc is None else (doc, (parts[0], at, *parts[2:]), 0)
                at -= len(listed)
            return None  # (pre_run: the task's own, after every layer's)
        if len(_deepest(parts, self.doc.data)) == len(parts):
            return None  # the task sets the very field
        for experiment in reversed(self.layers):  # the last layer's defaults win
            defaults = experiment.defaults
            if parts == ["sandbox", "driver"] and defaults.get("driver"):
                return experiment.doc, ("driver",), 0
            if parts[0] in DEFAULTS_BLOCKS and len(loc := _deepest(parts, defaults)) == len(parts):
                return experiment.doc, loc, 0
        return None

    def _caused_by_variant(self, problem: Problem) -> bool:
        """Not one of the task's own problems: the variant's values bring it about."""
        return problem not in self._base_problems

    @functools.cached_property
    def _base_problems(self) -> set[Problem]:
        """The task's own problems under no variant (computed only when a variant's problem may be one of them)."""
        return set(_collect(functools.partial(_validate_task, self.doc, self.base, self.overrides, self._first_row))[1])

    @property
    def _first_row(self) -> Row | None:
        return self.rows[0] if self.rows else None

    def _add(self, found: list[Problem]) -> None:
        self.problems.extend(found)  # said once (a row's problem comes once per variant): ``_resolve_file``


def _agent_files(task: Task, doc: Document, has_rows: bool = False) -> tuple[AgentConfig, list[Problem]]:
    """The agent block as it runs: its system prompt file read in (a ``${row.x}`` in it refused, as in an inline
    system prompt), its plugin folders made absolute; and a warning per plugin folder that is not there (yet: it may
    be made, or its variable set, before the run).

    A plugin path takes ``$VAR`` from the environment and is relative to the
    current folder (as in coder_eval).
    """
    agent, loc = task.agent, ("agent",)
    update: dict[str, Any] = {}
    warnings: list[Problem] = []
    if agent.system_prompt_file is not None:
        text = _prompt_file(doc, (*loc, "system_prompt_file"), agent.system_prompt_file)
        _check_prompt_file(doc, (*loc, "system_prompt_file"), agent.system_prompt_file, text, has_rows)
        update |= {"system_prompt": text or None, "system_prompt_file": None}
    if isinstance(agent.claude_settings, str):  # a settings file: its object, as a mapping in the task would be
        update["claude_settings"] = _settings_object(doc, (*loc, "claude_settings"), agent.claude_settings)
    if agent.plugins:
        plugins = []
        for index, plugin in enumerate(agent.plugins):
            folder = Path(os.path.expandvars(plugin.path)).absolute()
            where = (*loc, "plugins", index, "path")
            if not folder.is_dir():
                unset = unset_variables(plugin.path)
                how = f"{', '.join(unset)} not set" if unset else "$VARs expanded"
                why = f"warning: plugin folder not found: {folder} (relative to the current folder; {how})"
                warnings.append(doc.problem_at(where, why))
            elif not_a_plugin := _not_a_plugin(folder):
                warnings.append(doc.problem_at(where, f"warning: {not_a_plugin}"))
            plugins.append(plugin.model_copy(update={"path": str(folder)}))
        update["plugins"] = plugins
    return (agent.model_copy(update=update) if update else agent), warnings


def _not_a_plugin(folder: Path) -> str | None:
    """Why Claude Code would find no plugin in ``folder`` (None: it is one). Pointed one level too deep, at its
    ``skills/``, or at any other folder, the agent is offered nothing and a skill-on variant runs as skill-off,
    in silence (coder_eval's later docs warn of it)."""
    if (folder / ".claude-plugin" / "plugin.json").is_file() or any(folder.glob("skills/*/SKILL.md")):
        return None
    if any(folder.glob("*/SKILL.md")):
        return (
            f"{folder} holds skills (<name>/SKILL.md) itself: name the plugin folder above it, the one with "
            ".claude-plugin/plugin.json and skills/"
        )
    return f"no Claude Code plugin in {folder}: neither .claude-plugin/plugin.json nor skills/<name>/SKILL.md"


def _stands_on_rows(problem: Problem, merged: dict[str, Any]) -> bool:
    """A problem in a criterion's value that holds ``${row.x}`` (or in a criterion whose type is one): it cannot be
    judged without the dataset's rows. A missing or unknown field can: no row's value supplies or removes a key."""
    criteria = merged.get("success_criteria")
    parts = problem.field.split(".")
    if not isinstance(criteria, list) or parts[0] != "success_criteria" or len(parts) < 2 or not parts[1].isdigit():
        return False
    if int(parts[1]) >= len(criteria) or problem.message.startswith(UNKNOWN_FIELD):
        return False
    criterion = criteria[int(parts[1])]
    if not isinstance(criterion, dict) or "${row." in repr(criterion.get("type")):
        return "${row." in repr(criterion)
    return "${row." in repr(_named_value(criterion, parts[2:]))


def _named_value(value: Any, keys: list[str]) -> Any:
    """What a problem's dotted field names under ``value`` (None where nothing is: a missing field)."""
    for key in keys:
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def _tags_left_out(task: Task, spec: RunSpec) -> str | None:
    """Why ``--tags`` (any of them) or ``--exclude-tags`` (none of them) leaves the task out, whole tags compared."""
    if spec.tags and not set(spec.tags) & set(task.tags):
        return "tasks without the tags " + ",".join(spec.tags)
    if set(spec.exclude_tags) & set(task.tags):
        return "tasks with the excluded tags " + ",".join(spec.exclude_tags)
    return None


def _repeats(variant: Variant, layers: list[LoadedExperiment], spec: RunSpec) -> tuple[int, str]:
    """The replicates asked for, and by what: --repeats, else the variant's, the experiment's, the base layer's
    repeats, else 1."""
    asked = [(spec.repeats, "--repeats"), (variant.repeats, f"variant {variant.variant_id}'s repeats")]
    asked += [(layer.model.default_repeats, f"the repeats of {layer.doc.path}") for layer in reversed(layers)]
    return next(((n, by) for n, by in asked if n is not None), (1, "repeats"))


def _trials(task: Task) -> int:
    return task.simulation.n_trials if task.simulation is not None and task.simulation.enabled else 1


def _replicates(task: Task, repeats: int) -> int:
    """A dialog's trials when it has several, else the repeats: coder_eval's fan-out (the guide: n_trials takes
    precedence over repeats when simulation is enabled)."""
    return _trials(task) if _trials(task) > 1 else repeats


def _trials_warning(task: Task, doc: Document, repeats: tuple[int, str]) -> Problem | None:
    """Repeats that a dialog of several trials sets aside: said, never dropped in silence."""
    count, by = repeats
    if _trials(task) == 1 or count == 1:
        return None
    loc: Loc = ("simulation", "n_trials")
    why = f"warning: the dialog runs its {_trials(task)} trials, not {by} ({count}): n_trials takes precedence"
    return doc.problem_at(loc, why)


def _input_budget_warning(task: Task, agent: AgentConfig, doc: Document) -> Problem | None:
    """codex's fresh prompt tokens are cache creation: an input budget that leaves them out never binds."""
    limits = task.run_limits
    if agent.resolved_type != "codex" or limits.max_input_tokens is None or limits.count_cache_creation:
        return None
    loc: Loc = ("run_limits", "max_input_tokens")
    why = (
        "warning: codex records its fresh prompt tokens as cache creation, so max_input_tokens counts none of them "
        "without run_limits.count_cache_creation: true"
    )
    return doc.problem_at(loc, why)


def _model_of_another_type_warning(
    agent: AgentConfig, doc: Document, overrides: list[tuple[Loc, Any]]
) -> Problem | None:
    """``--type`` changes the agent but keeps a model the task names for its own (as coder_eval does): a claude
    model handed to codex is asked of codex's route. Said, so that ``--model`` can name one for the new type."""
    given = {loc for loc, _ in overrides}
    if ("agent", "type") not in given or ("agent", "model") in given or agent.model is None:
        return None
    written = doc.data.get("agent") if isinstance(doc.data, dict) else None
    written_type = written.get("type") if isinstance(written, dict) else None
    if written_type in (None, agent.resolved_type):
        return None
    why = (
        f"warning: --type {agent.resolved_type} keeps this model, written for a {written_type} agent; "
        f"give --model to choose one for {agent.resolved_type}"
    )
    return doc.problem_at(("agent", "model"), why)


def _criterion_warnings(task: Task, expansions: list[Expansion], doc: Document) -> list[Problem]:
    """Each criterion's ``load_warnings``, at its field's line. One a row fills in (``expected_label:
    ${row.label}``) is judged per row, each warning said once with the rows it stands for: a dataset of thousands of
    rows gives a line per distinct warning, not one per row."""
    rows: dict[tuple[int, str, str], list[str]] = {}
    for index, criterion in enumerate(task.success_criteria):
        filled = {row.row_id: update["success_criteria"][index] for row, update in expansions if row is not None}
        if all(each is criterion for each in filled.values()):
            filled = {"": criterion}  # the same for every row: said once, naming none
        for row_id, each in filled.items():
            for name, why in each.load_warnings():
                rows.setdefault((index, name, why), []).extend([row_id] if row_id else [])
    found = []
    for (index, name, why), ids in rows.items():
        loc: Loc = ("success_criteria", index, name)
        shown = ", ".join(map(repr, ids[:3])) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        said = f"warning: {why}" + (f" (rows {shown})" if ids else "")
        found.append(doc.problem_at(loc, said))
    return found


def _collect(step: Callable[[], T]) -> tuple[T | None, list[Problem]]:
    try:
        return step(), []
    except InvalidInput as exc:
        return None, exc.problems


def _dataset_rows(merged: dict[str, Any], doc: Document, spec: RunSpec, notes: list[Problem]) -> list[Row] | None:
    """The selected rows of the task's dataset block (None without one): its split, then its sample.

    A dataset that cannot be read is the file's only problem: every ``${row.x}``
    would otherwise be reported again as if the task had no dataset.
    """
    if merged.get("dataset") is None:
        return None
    try:
        dataset = Dataset.model_validate(merged["dataset"])
    except ValidationError as exc:
        raise InvalidInput(
            problems_from_validation(exc, merged["dataset"], str(doc.path), doc.line_of, ("dataset",), model=Dataset)
        ) from None
    rows = load_rows(dataset, doc)
    if spec.split is not None:
        rows, labels = split_rows(rows, dataset.split_field, spec.split)
        if not rows:
            why = (
                f"--split {spec.split!r}: no row of the dataset is in that split (split_field "
                f"{dataset.split_field!r}); labelled splits present: {labels}"
            )
            raise _NoRowInSplit([doc.problem_at(("dataset", "split_field"), why)])
    if spec.sample is not None:
        rows = sample_rows(rows, spec.sample, dataset.stratify_field, CLI_SAMPLE_SEED)
        if len(rows) > spec.sample:  # coder_eval's --sample N draws N in all: say why this one draws more
            notes.append(doc.problem_at(("dataset",), _per_stratum_note(spec.sample, dataset.stratify_field, rows)))
    else:
        per_stratum = spec.sample_per_stratum or dataset.sample_per_stratum
        rows = sample_rows(rows, per_stratum, dataset.stratify_field, dataset.sample_seed)
    if not rows:
        raise InvalidInput([doc.problem_at(("dataset",), "the dataset has no rows")])
    return rows


def _per_stratum_note(sample: int, field: str, rows: list[Row]) -> str:
    strata = len({str(row.values.get(field, "")) for row in rows})
    return (
        f"note: --sample {sample} keeps up to {sample} row(s) per stratum of {field!r} ({strata} strata): "
        f"{len(rows)} rows (--limit N runs the first N)"
    )


def _variants(experiment: LoadedExperiment | None) -> list[tuple[int, Variant, dict[str, Any] | None]]:
    """(index, model, raw) of each variant; a run without experiment has the one ``default``."""
    if experiment is None:
        return [(0, Variant(variant_id=DEFAULT_VARIANT), None)]
    pairs = zip(experiment.model.variants, experiment.doc.data["variants"], strict=True)
    return [(index, model, raw) for index, (model, raw) in enumerate(pairs)]


def _apply_prompt(
    merged: dict[str, Any], variant: Variant, index: int, layers: list[LoadedExperiment], doc: Document
) -> Mutated | None:
    """The variant's prompt in place of the task's, else the experiment's prompt mutations applied to it; the
    prompt before them and the mutations (None: none applied), which a dataset's rows take again once filled in.

    A variant prompt (inline, or a file relative to the experiment) skips every
    mutation; the mutations of ``defaults`` go first, the variant's after.
    """
    if variant.initial_prompt is not None or variant.initial_prompt_file is not None:
        prompt = variant.initial_prompt
        if variant.initial_prompt_file is not None:
            where = ("variants", index, "initial_prompt_file")
            prompt = _prompt_file(layers[-1].doc, where, variant.initial_prompt_file)
        merged["initial_prompt"] = prompt
        merged.pop("initial_prompt_file", None)
        return None
    mutations = [m for experiment in layers for m in experiment.model.defaults.prompt_mutations]
    mutations += variant.prompt_mutations
    if not mutations:
        return None
    before = merged.get("initial_prompt")
    if isinstance(merged.get("initial_prompt_file"), str):
        before = _prompt_file(doc, ("initial_prompt_file",), merged["initial_prompt_file"])
    if not isinstance(before, str):  # the mutations would do nothing, and both arms would run the same task
        own = bool(variant.prompt_mutations)
        mutated_at: Loc = ("variants", index, "prompt_mutations") if own else ("defaults", "prompt_mutations")
        owner = layers[-1] if own else next(x for x in layers if x.model.defaults.prompt_mutations)
        why = f"task {merged.get('task_id')!r} ({doc.path}) has no initial_prompt to mutate (coder_eval refuses it too)"
        raise InvalidInput([owner.doc.problem_at(mutated_at, why)])
    prompt = before
    for mutation in mutations:
        prompt = mutation.apply(prompt)
    merged["initial_prompt"] = prompt
    merged.pop("initial_prompt_file", None)
    return before, tuple(mutations), tuple(PLACEHOLDER.search(m.model_dump_json()) is not None for m in mutations)


def _duplicate_id_problems(task_id: Any, doc: Document, seen: dict[str, Path]) -> list[Problem]:
    """An invalid task file's id (as written, under the command line's) taken by another file, said with its other
    problems; the id stays unclaimed (the run goes on without the file)."""
    if not isinstance(task_id, str):
        return []
    return _collect(functools.partial(_check_unique_id, task_id, doc.path, doc, dict(seen)))[1]


def _check_unique_id(task_id: str, path: Path, doc: Document, seen: dict[str, Path]) -> None:
    if task_id in seen and seen[task_id] != path:
        raise InvalidInput(
            [
                Problem(
                    str(path),
                    doc.line_of(("task_id",)),
                    "task_id",
                    f"duplicate task_id {task_id!r} (also in {seen[task_id]})",
                )
            ]
        )
    seen[task_id] = path


def _check_placeholders(layered: list[dict[str, Any]], doc: Document, has_rows: bool) -> None:
    """Refuse ``${row.x}`` where it would not be substituted.

    Outside the fields that take row values it would reach the agent or the
    shell verbatim (``/bin/sh: Bad substitution``).
    """
    problems: dict[Problem, None] = {}
    for merged in layered:
        for loc, text in _placeholder_leaves(merged, ()):
            if why := _placeholder_problem(loc, text, has_rows):
                problems[doc.problem_at(loc, why)] = None
    if problems:
        raise InvalidInput(list(problems))


def _placeholder_problem(loc: Loc, text: str, has_rows: bool, near_misses: bool = True) -> str | None:
    """What is wrong with the placeholders of ``text`` written in the field ``loc`` (None: nothing); a near-miss
    (``${rows.x}``) only when ``near_misses``."""
    if near_misses and (malformed := _malformed_placeholder(text)):
        return f"{malformed} is not a placeholder; write ${{row.<field>}}"
    if ROW_PLACEHOLDER not in text:
        return None
    if not has_rows:
        return NO_DATASET
    return None if _substituted_here(loc) else NOT_SUBSTITUTED


# A prompt file's field, and the inline field whose text it holds (its placeholders are judged as that field's).
PROMPT_FILE_FIELDS: dict[Loc, Loc] = {
    ("initial_prompt_file",): ("initial_prompt",),
    ("agent", "system_prompt_file"): ("agent", "system_prompt"),
}


def _check_prompt_file(doc: Document, loc: Loc, relative: str, text: str, has_rows: bool) -> None:
    """The text of the prompt file ``relative`` (named at ``loc``) checked as its inline field's would be: a
    placeholder without a dataset, or in a field not filled per row, would reach the agent verbatim. Said at the
    ``*_file`` field's line, naming the file. Near-misses stay text, as coder_eval passes them: a prompt file
    holds code (a JavaScript template literal, ``${rows.length}``), which an inline prompt rarely does."""
    if why := _placeholder_problem(PROMPT_FILE_FIELDS[loc], text, has_rows, near_misses=False):
        problem = doc.problem_at(loc, f"{why} (in the file {relative})")
        raise InvalidInput([problem])


# What was meant as a placeholder but is not one (`${row.}`, `${rows.x}`, `${ row.x }`, `${row.x` unclosed):
# left as text it reaches a file check or the shell verbatim. (`${row}` alone is a shell variable, and left so.)
NEAR_PLACEHOLDER = re.compile(r"\$\{\s*rows?\s*\.")
ROW_PLACEHOLDER = "${row."  # a field holding one is filled per row


def _malformed_placeholder(text: str) -> str | None:
    """The first near-placeholder of ``text`` that is not a ``${row.<field>}``, as written (None: there is none)."""
    for near in NEAR_PLACEHOLDER.finditer(text):
        if not PLACEHOLDER.match(text, near.start()):
            end = text.find("}", near.start())
            return text[near.start() : end + 1] if end >= 0 else text[near.start() :]
    return None


NO_DATASET = "${row.…} needs a dataset: this task has none"
NOT_SUBSTITUTED = (
    "${row.…} is not substituted here; only initial_prompt, success_criteria, pre_run/post_run commands and "
    "agent.trajectory are"
)


def _substituted_here(loc: Loc) -> bool:
    match loc:
        case ("initial_prompt",) | ("success_criteria", *_):
            return True
        case ("pre_run" | "post_run", int(), "command") | ("agent", "trajectory"):
            return True
    return False


def _placeholder_leaves(value: Any, loc: Loc) -> list[tuple[Loc, str]]:
    """Every string leaf holding ``${row.`` or a near miss (a dataset's own rows are data, not templates)."""
    if isinstance(value, str):
        return [(loc, value)] if "${row." in value or NEAR_PLACEHOLDER.search(value) else []
    if isinstance(value, dict):
        items = [(key, item) for key, item in value.items() if (*loc, key) != ("dataset", "rows")]
    elif isinstance(value, list):
        items = list(enumerate(value))
    else:
        return []
    return [leaf for key, item in items for leaf in _placeholder_leaves(item, (*loc, key))]


def _validate_task(
    doc: Document, merged: dict[str, Any], overrides: list[tuple[Loc, Any]], first_row: Row | None
) -> Task:
    """Validate the merged task; on a dataset task, as its first row sees it.

    Placeholders may stand in typed fields (``timeout: "${row.n}"``), so the
    template is checked with real values; later rows re-check only the
    criteria that hold a placeholder.
    """
    data = merged
    if first_row is not None:
        criteria = merged.get("success_criteria")
        if isinstance(criteria, list):
            data = {**merged, "success_criteria": _first_row_criteria(doc, criteria, first_row)}
    task = _task_model(doc, data, overrides, {"base_dir": str(doc.path.parent)})
    replayed = task.agent.trajectory if task.agent.resolved_type == "replay" else None
    if replayed and ROW_PLACEHOLDER not in replayed:  # a file per row: each checked with its row (below)
        trajectory = load_trajectory(doc.path.parent / replayed, first_row.values if first_row else None)
        _check_replayed_opening(task, trajectory, doc)
    return task


def _row_agent(agent: AgentConfig, row: Row | None) -> AgentConfig:
    """The agent as ``row`` runs it: a replayed trajectory's file may be named by the row (`rec/${row.id}.json`, as
    `coder-eval export` writes a dataset run's, one file per row); its fields were checked at load."""
    if row is None or not agent.trajectory or ROW_PLACEHOLDER not in agent.trajectory:
        return agent
    return agent.model_copy(update={"trajectory": substitute(agent.trajectory, row, set())})


def _first_row_criteria(doc: Document, criteria: list[Any], row: Row) -> list[Any]:
    """The criteria as the first row fills them in; a field it does not have is the problem said (left in a typed
    field, ``timeout: "${row.zz}"``, it read as "not a valid number")."""
    filled, problems = [], []
    for index, raw in enumerate(criteria):
        unknown: set[str] = set()
        filled.append(_row_criterion(raw, row, unknown)[0])
        if unknown:
            problems.append(_unknown_field_problem(doc, ("success_criteria", index), row, unknown))
    if problems:
        raise InvalidInput(problems)
    return filled


def _task_model(doc: Document, data: dict[str, Any], overrides: list[tuple[Loc, Any]], context: dict[str, str]) -> Task:
    """The Task model of ``data``; its files are checked when ``context`` has the task's ``base_dir``."""
    try:
        return Task.model_validate(data, context=context)
    except ValidationError as exc:
        problems = problems_from_validation(exc, data, str(doc.path), doc.line_of, model=Task)
        problems += _beyond_moved_limits(data, doc, problems, context)
        raise InvalidInput([_mark_override(p, overrides, doc) for p in problems]) from None


def _beyond_moved_limits(
    data: dict[str, Any], doc: Document, found: list[Problem], context: dict[str, str]
) -> list[Problem]:
    """The task's other problems when some are caps in their old place at its top (``task_timeout``): the model
    refuses those before it reads anything else (``agent.max_turns`` among them), and a file's problems are said
    in one pass."""
    stripped = {key: value for key, value in data.items() if key not in MOVED_TO_RUN_LIMITS}
    if stripped == data:
        return []
    try:
        Task.model_validate(stripped, context=context)
    except ValidationError as exc:
        more = problems_from_validation(exc, stripped, str(doc.path), doc.line_of, model=Task)
        return [problem for problem in more if problem not in found]
    return []


def _check_replayed_opening(task: Task, trajectory: Trajectory, doc: Document) -> None:
    """A replayed dialog opens with the task's prompt or, when it has none, the trajectory's leading ``user:``
    message: one of them, never both (a leading message no dialog asks for would shift every later one)."""
    prompted = task.initial_prompt is not None or task.initial_prompt_file is not None
    if trajectory.opening is not None and (prompted or not task.simulated):
        loc: Loc = ("agent", "trajectory")
        why = "the task has its own prompt" if prompted else "the task has no enabled simulation"
        message = (
            f"the trajectory opens with a user: message, which only opens a simulated dialog with no prompt: {why}"
        )
    elif trajectory.opening is None and task.simulated and not prompted:
        loc = ("initial_prompt",)
        message = "required for a replayed dialog, or a trajectory whose first item is the user's opening (user:)"
    else:
        return
    raise InvalidInput([doc.problem_at(loc, message)])


def _check_trajectory_fields(task: Task, doc: Document, rows: list[Row] | None) -> None:
    """Every ``${row.x}`` of a replay trajectory, in its file's name or in the file, must name a field of every
    row; a file named by the row must be there for each row."""
    if not rows or task.agent.resolved_type != "replay" or not task.agent.trajectory:
        return
    loc, named = ("agent", "trajectory"), task.agent.trajectory
    if ROW_PLACEHOLDER not in named:
        names = set(PLACEHOLDER.findall(_read_file(doc, loc, named)))
        problems = [
            _unknown_field_problem(doc, loc, row, names - set(row.values)) for row in rows if names - set(row.values)
        ]
    else:
        problems = [problem for row in rows for problem in _row_trajectory_problems(task, doc, named, row)]
    if problems:
        raise InvalidInput(problems)


def _row_trajectory_problems(task: Task, doc: Document, named: str, row: Row) -> list[Problem]:
    """The problems of the trajectory file ``row`` names, as a single file's are found at load: a field the row
    lacks in the name; the file (missing, unreadable); what is in it (its own file and line)."""
    loc: Loc = ("agent", "trajectory")
    unknown: set[str] = set()
    relative = substitute(named, row, unknown)
    if unknown:
        return [_unknown_field_problem(doc, loc, row, unknown)]
    try:
        _read_file(doc, loc, relative)
        _check_replayed_opening(task, load_trajectory(doc.path.parent / relative, row.values), doc)
    except InvalidInput as exc:
        said = f"(row {row.row_id!r} at {row.origin})"
        return [replace(p, message=f"{p.message} {said}") for p in exc.problems]
    return []


def _read_file(doc: Document, loc: Loc, relative: str) -> str:
    """A file a task or experiment points at (prompt, trajectory), relative to it, bounded; a failure is a problem
    at ``loc``."""
    if unnamable := file_name_problem(relative):
        raise InvalidInput([doc.problem_at(loc, f"{unnamable}: {relative[:60]!r}")])
    try:
        return read_input_text(doc.path.parent / relative, MAX_DOCUMENT_BYTES)
    except (OSError, UnicodeDecodeError, UnreadableFile) as exc:
        problem = doc.problem_at(loc, f"cannot read {relative}: {exc}")
        raise InvalidInput([problem]) from None


def _prompt_file(doc: Document, loc: Loc, relative: str) -> str:
    """A prompt file's text without its leading and trailing blank space, as coder_eval reads it (a file's last
    newline would otherwise double a mutation's separator)."""
    return _read_file(doc, loc, relative).strip()


def _settings_object(doc: Document, loc: Loc, relative: str) -> dict[str, Any]:
    """A ``claude_settings`` file's JSON object, read in at load (relative to the task, bounded): a missing or
    malformed file is the task's problem, not a failure of the run that copies it into the agent's HOME."""
    try:
        settings = json.loads(_read_file(doc, loc, relative))
    except json.JSONDecodeError as exc:
        why = f"{relative} is not JSON: {exc}"
    else:
        if isinstance(settings, dict):
            return settings
        why = f"{relative} is not a JSON object (the settings, as a mapping in the task would give them)"
    raise InvalidInput([doc.problem_at(loc, why)])


def _blame_variant(
    problem: Problem,
    raw: dict[str, Any],
    index: int,
    merged: dict[str, Any],
    experiment: Document,
    caused: Callable[[Problem], bool] | None = None,
) -> Problem:
    """A problem in a value the variant laid over the task is the experiment file's, at the variant's line (its
    template sources are found relative to it, too). One in the task's own value is too when ``caused`` says the
    variant's values cause it (its agent type against the task's trajectory or prompt): said at the variant's block
    on the way to that field, else at the variant."""
    if on_command_line(problem):  # the command line's value, laid over the variant's
        return problem
    parts = problem.field.split(".")
    loc = _set_by_variant(parts, raw, merged)
    message = problem.message.replace(TASK_RELATIVE, f"(relative to the task YAML {problem.path})")
    if message == REPO_FIRST and loc is not None and loc[0] == "template_sources":
        message = _after_the_tasks(True, problem.path, int(parts[2]) - int(loc[1]))
    if loc is None:
        if caused is None or not caused(problem):
            return problem
        loc = _deepest(parts, raw) if parts[0] in VARIANT_BLOCKS else ()
        message = f"{problem.field}: {problem.message} (in {problem.path}:{problem.line}, with this variant's values)"
    where: Loc = ("variants", index, *loc)
    return experiment.problem_at(where, message)


VARIANT_BLOCKS = ("agent", "sandbox", "run_limits", "simulation", "checker_context")  # merged over the task's
DEFAULTS_BLOCKS = (*VARIANT_BLOCKS, "pre_run", "post_run")  # laid under the task's (the hooks: around the task's)


def _after_the_tasks(variant: bool, task: str, before: int) -> str:
    """Why a repo source an experiment adds is not first: its sources come after the task's (and the defaults')."""
    whose, after = ("a variant's", "the task's own, then the defaults'") if variant else ("the defaults'", "the task's")
    sources = f"{before} source{'s' if before != 1 else ''}"
    return f"{REPO_FIRST}, and {whose} template_sources come after {after}: under the task {task}, after {sources}"


def _set_by_override(parts: list[str], overrides: list[tuple[Loc, Any]]) -> bool:
    """Whether the command line (``-D``, ``--type``...) set the field ``parts``, or a block holding it."""
    return any(parts[: len(loc)] == [str(step) for step in loc] for loc, _ in overrides)


def _set_by_variant(parts: list[str], raw: dict[str, Any], merged: dict[str, Any]) -> Loc | None:
    """Where in the variant the task's field ``parts`` came from, or None (the task's own, or a default's)."""
    if parts[:2] == ["sandbox", "template_sources"] and len(parts) > 2 and parts[2].isdigit():
        own = len(raw.get("template_sources") or [])  # appended after the task's own sources
        at = int(parts[2]) - (len((merged.get("sandbox") or {}).get("template_sources") or []) - own)
        return ("template_sources", at, *parts[3:]) if 0 <= at < own else None
    if parts[0] == "initial_prompt":  # the variant's prompt, inline or read from its file, replaces the task's
        return next(((key,) for key in ("initial_prompt", "initial_prompt_file") if raw.get(key) is not None), None)
    if parts == ["sandbox", "driver"] and raw.get("driver"):
        return ("driver",)
    if parts[0] not in VARIANT_BLOCKS:
        return None
    loc = _deepest(parts, raw)
    return loc if len(loc) == len(parts) else None


def _deepest(parts: list[str], raw: dict[str, Any]) -> Loc:
    """The longest start of the field path ``parts`` that the variant ``raw`` holds."""
    node: Any = raw
    loc: list[str | int] = []
    for part in parts:
        step: str | int
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node, step = node[int(part)], int(part)
        elif isinstance(node, dict) and part in node:
            node, step = node[part], part
        else:
            break
        loc.append(step)
    return tuple(loc)


def _mark_override(problem: Problem, overrides: list[tuple[Loc, Any]], doc: Document) -> Problem:
    """A problem of the task file ``doc`` in a value the command line set (``-D``, ``--type``...) is the command
    line's: said without a line of the file, once for the run however many task files meet it
    (:meth:`Resolution.add_problems` names them); the option is named when the problem's field does not name it.
    One in a file the value names (a dataset's row) stays that file's, at its line."""
    for loc, value in overrides:
        key = dotted(loc)
        if problem.field == key or key.startswith(problem.field + ".") or _holds(value, problem.field, key):
            flag = SHORTHAND_FLAGS.get(loc)  # (one of the two set it: both at once is refused)
            set_by = f" (value set by {f'{flag} or ' if flag else ''}-D {key})"
            if problem.path != str(doc.path):
                return replace(problem, message=problem.message + set_by)
            why = problem.message if problem.field == key and flag is None else problem.message + set_by
            return Problem(OVERRIDES, None, problem.field, why)
    return problem


def _holds(value: Any, field: str, key: str) -> bool:
    """Whether the value ``-D key=value`` sets the field ``field`` below ``key`` (``-D 'agent={model: m}'`` sets
    ``agent.model``, not the task's own ``agent.system_prompt_file``)."""
    if not field.startswith(key + "."):
        return False
    for part in field[len(key) + 1 :].split("."):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return not isinstance(value, (dict, list))  # below a scalar: the value the problem is in
    return True


Expansion = tuple[Row | None, dict[str, Any]]  # a row and the task fields its values fill in
ROW_HOOKS = ("pre_run", "post_run")  # commands a row's values are filled in (shell-quoted)


def _expand_rows(
    task: Task,
    merged: dict[str, Any],
    rows: list[Row] | None,
    doc: Document,
    mutated: Mutated | None = None,
    unread: bool = False,
) -> list[Expansion]:
    """One (row, filled-in fields) per dataset row, or a single one without a dataset (``unread``: its dataset could
    not be read, and what stands on the rows is not judged). A prompt file is read once, its placeholders checked
    as an inline prompt's are."""
    prompt, source = task.initial_prompt, None
    if task.initial_prompt_file is not None:
        source = task.initial_prompt_file
        prompt = _prompt_file(doc, ("initial_prompt_file",), source)
        _check_prompt_file(doc, ("initial_prompt_file",), source, prompt, rows is not None or unread)
    if rows is None:
        return [(None, {"initial_prompt": prompt})]
    raw_criteria = merged["success_criteria"]
    templated = [i for i, c in enumerate(raw_criteria) if "${row." in repr(c)]
    expansions: list[Expansion] = []
    problems: list[Problem] = []
    for row in rows:  # each field of each row checked: a row's problems in one pass
        fields: dict[str, Callable[[], Any]] = {
            "initial_prompt": functools.partial(_row_prompt, prompt, row, doc, source),
            "success_criteria": functools.partial(_row_criteria, task, raw_criteria, templated, row, doc),
            **{hooks: functools.partial(_row_hooks, getattr(task, hooks), hooks, row, doc) for hooks in ROW_HOOKS},
        }
        if mutated is not None:
            fields["initial_prompt"] = functools.partial(_mutated_row_prompt, mutated, row, doc)
        filled = {name: _collect(fill) for name, fill in fields.items()}
        found = [problem for _, said in filled.values() for problem in said]
        problems += found
        if not found:
            expansions.append((row, {name: value for name, (value, _) in filled.items()}))
    if problems:
        raise InvalidInput(problems)
    return expansions


def _unknown_field_problem(doc: Document, loc: Loc, row: Row, unknown: set[str], source: str | None = None) -> Problem:
    """A placeholder written at ``loc`` (in the file ``source`` it names, if given) names a field ``row`` lacks."""
    names = ", ".join(sorted(unknown))
    written = f" of the file {source}" if source is not None else ""
    return Problem(
        str(doc.path),
        doc.line_of(loc),
        ".".join(map(str, loc)),
        f"unknown row field(s) {names} in ${{row.…}}{written} (row {row.row_id!r} at {row.origin})",
    )


def _row_prompt(prompt: str | None, row: Row, doc: Document, source: str | None = None) -> str | None:
    """The prompt with the row's values; ``source``: the initial_prompt_file it was read from (None: inline)."""
    unknown: set[str] = set()
    result: str | None = substitute(prompt, row, unknown)  # untyped: text stays text
    if unknown:
        loc: Loc = ("initial_prompt",) if source is None else ("initial_prompt_file",)
        raise InvalidInput([_unknown_field_problem(doc, loc, row, unknown, source)])
    return result


def _mutated_row_prompt(mutated: Mutated, row: Row, doc: Document) -> str | None:
    """The row's prompt, then the experiment's mutations (their own ``${row.x}`` filled too): a replace of the row's
    text replaces it, as coder_eval mutates the filled prompt."""
    before, mutations, templated = mutated
    prompt, unknown = _row_prompt(before, row, doc), set[str]()
    for number, mutation in enumerate(mutations):
        if not templated[number]:  # nothing of the row's in it: as written
            prompt = mutation.apply(prompt or "")
            continue
        try:
            filled = type(mutation).model_validate(substitute(mutation.model_dump(), row, unknown))
        except ValidationError as exc:  # a row's value made it invalid (a regex pattern that no longer compiles)
            said = "; ".join(str(error.get("ctx", {}).get("message") or error["msg"]) for error in exc.errors())
            why = f"prompt mutation {number + 1} with row {row.row_id!r} ({row.origin}): {said}"
            problem = doc.problem_at(("initial_prompt",), why)
            raise InvalidInput([problem]) from None
        prompt = filled.apply(prompt or "")
    if unknown:
        raise InvalidInput([_unknown_field_problem(doc, ("initial_prompt",), row, unknown)])
    return prompt


def _row_hooks(hooks: list[HookCommand], name: str, row: Row, doc: Document) -> list[HookCommand]:
    """pre_run / post_run commands with the row's values, shell-quoted."""
    filled, problems = [], []
    for index, hook in enumerate(hooks):
        unknown: set[str] = set()
        filled.append(hook.model_copy(update={"command": substitute(hook.command, row, unknown, command=True)}))
        if unknown:
            problems.append(_unknown_field_problem(doc, (name, index, "command"), row, unknown))
    if problems:
        raise InvalidInput(problems)
    return filled


def _row_criterion(raw: Any, row: Row, unknown: set[str]) -> tuple[Any, Any | None]:
    """A criterion with the row's values, and the validated criterion (None: the text version, unchecked).

    A field that is exactly ``${row.x}`` keeps the value's type: ``expected:
    ${row.sq}`` with ``sq: 1`` compares as the integer 1. Where only text is
    valid (a number in a string field), the text is used, and a null is
    ``""`` there (``expected_stdout: ${row.z}`` is checked, not left unset).
    """
    typed = substitute(raw, row, unknown, typed=True)
    if unknown:
        return typed, None
    try:
        criterion = criterion_adapter().validate_python(typed)
    except ValidationError:
        return substitute(raw, row, set()), None
    texts = [at for at in null_placeholders(raw, row) if _takes_only_text(type(criterion), at)]
    if not texts:
        return typed, criterion
    for at in texts:
        _put(typed, at, "")
    try:
        return typed, criterion_adapter().validate_python(typed)
    except ValidationError:
        return typed, None  # the caller validates it again and says why, naming the row


def _put(tree: Any, at: tuple[str | int, ...], value: Any) -> None:
    for step in at[:-1]:
        tree = tree[step]
    tree[at[-1]] = value


def _takes_only_text(model: type[BaseModel], at: tuple[str | int, ...]) -> bool:
    """Whether the field at ``at`` in ``model`` takes text and nothing else (``str`` or ``str | None``): there a null
    row value is ``""``, as coder_eval writes it, not None, which an optional field reads as "not set"."""
    annotation: Any = model
    for step in at:
        annotation = _field_inside(_one_type(annotation), step)
    return _one_type(annotation) is str


def _one_type(annotation: Any) -> Any:
    """``annotation`` without ``Annotated`` and ``| None``; None when it is a union of several types."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, UnionType):
        kinds = [kind for kind in get_args(annotation) if kind is not type(None)]
        return _one_type(kinds[0]) if len(kinds) == 1 else None
    return annotation


def _field_inside(annotation: Any, step: str | int) -> Any:
    """The annotation of a model's field, a list's item or a mapping's value at ``step``; None when unknown."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(step, str):
        found = [f for name, f in annotation.model_fields.items() if step in (name, f.alias)]
        return found[0].annotation if found else None
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list and isinstance(step, int) and args:
        return args[0]
    if origin is dict and isinstance(step, str) and len(args) == 2:
        return args[1]
    return None


def _row_criteria(task: Task, raw: list[Any], templated: list[int], row: Row, doc: Document) -> list[Any]:
    if not templated:
        return task.success_criteria
    criteria = list(task.success_criteria)
    problems = []
    for index in templated:
        unknown: set[str] = set()
        value, criterion = _row_criterion(raw[index], row, unknown)
        if unknown:
            problems.append(_unknown_field_problem(doc, ("success_criteria", index), row, unknown))
            continue
        try:
            criteria[index] = criterion if criterion is not None else criterion_adapter().validate_python(value)
        except ValidationError as exc:
            where = ("success_criteria", index)
            found = problems_from_validation(exc, value, str(doc.path), doc.line_of, where, model=criterion_union())
            problems.extend(
                Problem(p.path, p.line, p.field, f"{p.message} (row {row.row_id!r} at {row.origin})") for p in found
            )
    if not problems:  # the task's rules on its criteria as a whole, with this row's weights (`weight: ${row.w}`)
        for named, why in gating_problems(criteria):
            loc: Loc = tuple(int(part) if part.isdigit() else part for part in named.split("."))
            problems.append(doc.problem_at(loc, f"{why} (row {row.row_id!r} at {row.origin})"))
    if problems:
        raise InvalidInput(problems)
    return criteria
