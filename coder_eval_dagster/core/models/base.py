"""Shared building blocks of the task-format models."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

# Task, row, variant and experiment ids become directory names (and Dagster
# partition keys), so they keep to a safe alphabet that cannot spell ``.``,
# ``..`` or a separator, and to a length that keeps run paths well short of
# the file system's limits.
SAFE_ID = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$"
SAFE_ID_RE = re.compile(SAFE_ID)
MAX_ID_LENGTH = 100
# The files a run writes beside the folders ids name (layout.py: a run's, a variant's and a suite's folder): an
# id spelling one would take its place, and the run would end when it writes that file. The names are layout.py's
# again (the format imports nothing above it): tests/core/test_validation_rules.py keeps the two lists one.
RUN_FOLDER_FILES = frozenset(
    {
        "run_plan.json",
        "snapshot.pickle",
        "spend.jsonl",
        "run.json",
        "run.md",
        "index.html",
        "experiment.json",
        "experiment.md",
        "comparison.html",
        "junit.xml",
        "variant.json",
        "variant.md",
        "suite.json",
    }
)
# A comparison page and its figures, `<page stem>.<figure>.png` (core/compare/comparison_files.py).
RUN_FOLDER_FILE_RE = re.compile(r"comparison(-vs-.*)?(\.html|\..+\.png)")


def reserved_name_problem(value: str) -> str | None:
    if value in RUN_FOLDER_FILES or RUN_FOLDER_FILE_RE.fullmatch(value):
        return "names a file the run folder writes beside the id's own folder; choose another id"
    return None


def not_a_run_file(value: str) -> str:
    problem = reserved_name_problem(value)
    if problem:
        raise PydanticCustomError("reserved_id", problem)
    return value


SafeId = Annotated[str, StringConstraints(pattern=SAFE_ID, max_length=MAX_ID_LENGTH), AfterValidator(not_a_run_file)]


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be an id (None: it can), for ids checked outside a model (row ids)."""
    if len(value) > MAX_ID_LENGTH:
        return f"is {len(value)} characters long; ids are at most {MAX_ID_LENGTH} (they become directory names)"
    if not SAFE_ID_RE.match(value):
        return f"must match {SAFE_ID} (it becomes a directory name)"
    return reserved_name_problem(value)


class StrictModel(BaseModel):
    """Every block of the format rejects unknown keys (the guide's extra="forbid"), inf or nan where a number goes
    (a weight of .inf passed validation and failed the run), and a boolean where a number goes (pydantic's lax mode
    read ``weight: true`` as 1.0 and ``timeout: false`` as 0)."""

    model_config = ConfigDict(extra="forbid", frozen=False, validate_default=False, allow_inf_nan=False)

    @model_validator(mode="wrap")
    @classmethod
    def _no_boolean_for_a_number(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        booleans = booleans_for_numbers(cls, data) if isinstance(data, dict) else []
        if not booleans:
            return handler(data)
        problems = [
            InitErrorDetails(
                type=PydanticCustomError(
                    "bool_for_number", "a number is expected, not a boolean ({spelt})", {"spelt": str(value).lower()}
                ),
                loc=loc,
                input=value,
            )
            for loc, value in booleans
        ]
        held = {loc[0] for loc, _ in booleans}
        try:
            handler({key: value for key, value in data.items() if key not in held})
        except ValidationError as rest:
            problems += [_raised_again(error) for error in rest.errors() if _beside_the_booleans(error, held)]
        raise ValidationError.from_exception_data(cls.__name__, _in_file_order(problems, data))


def _beside_the_booleans(error: ErrorDetails, held: set[Any]) -> bool:
    """Whether a problem of the block validated without its fields that hold booleans is the block's own: not the
    field missing that the boolean stood for, nor a rule between fields (those wait until every field has a value of
    its type, as pydantic's own do)."""
    loc = error["loc"]
    return bool(loc) and not (error["type"] == "missing" and len(loc) == 1 and loc[0] in held)


def _in_file_order(problems: list[InitErrorDetails], data: dict[Any, Any]) -> list[InitErrorDetails]:
    """The problems in the order of the keys they are about, as the file gives them."""
    order = {key: index for index, key in enumerate(data)}
    return sorted(problems, key=lambda problem: order.get(next(iter(problem.get("loc", ())), None), len(order)))


Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class NumberSlots:
    """Where a field's value holds a number that lax mode would also take as a boolean: the value itself, its list's
    items, its mapping's values."""

    itself: bool = False
    items: NumberSlots | None = None
    values: NumberSlots | None = None

    def booleans(self, value: Any, loc: Loc) -> Iterator[tuple[Loc, bool]]:
        if isinstance(value, bool):
            if self.itself:
                yield loc, value
        elif isinstance(value, list) and self.items is not None:
            for index, item in enumerate(value):
                yield from self.items.booleans(item, (*loc, index))
        elif isinstance(value, dict) and self.values is not None:
            for key, item in value.items():
                yield from self.values.booleans(item, (*loc, key if isinstance(key, str | int) else str(key)))


def number_slots(annotation: Any) -> NumberSlots | None:
    """Where a value of ``annotation`` must not be a boolean (None: nowhere): an int or float, also constrained,
    optional or in a union with types that refuse booleans anyway, and the items of a list or values of a dict of
    them. A type that takes booleans itself (bool, Any, object) or any other type is left to its own validation."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return number_slots(args[0])
    if origin is Union or origin is UnionType:
        return _union_slots(args)
    if origin is list and args:
        items = number_slots(args[0])
        return NumberSlots(items=items) if items else None
    if origin is dict and len(args) == 2:
        values = number_slots(args[1])
        return NumberSlots(values=values) if values else None
    if isinstance(annotation, type) and issubclass(annotation, int | float) and not issubclass(annotation, bool):
        return NumberSlots(itself=True)
    return None


def _union_slots(members: tuple[Any, ...]) -> NumberSlots | None:
    """A union refuses a boolean where one of its members does and none takes it (``bool | int`` stays as it is)."""
    if any(_takes_booleans(member) for member in members):
        return None
    slots = [found for found in map(number_slots, members) if found]
    if not slots:
        return None
    return NumberSlots(
        itself=any(found.itself for found in slots),
        items=next((found.items for found in slots if found.items), None),
        values=next((found.values for found in slots if found.values), None),
    )


def _takes_booleans(annotation: Any) -> bool:
    if get_origin(annotation) is Annotated:
        return _takes_booleans(get_args(annotation)[0])
    if get_origin(annotation) is Literal:
        return any(isinstance(choice, bool) for choice in get_args(annotation))
    return annotation in (bool, Any, object)


@functools.cache
def number_fields(model: type[BaseModel]) -> dict[str, NumberSlots]:
    """A model's fields that hold numbers, by the key they are given under: worked out once per model, at its first
    validation (its annotations are all resolved by then)."""
    found = {name: number_slots(field.annotation) for name, field in model.model_fields.items()}
    return {model.model_fields[name].alias or name: slots for name, slots in found.items() if slots}


def booleans_for_numbers(model: type[BaseModel], data: dict[Any, Any]) -> list[tuple[Loc, bool]]:
    """Every boolean ``data`` gives where ``model`` wants a number, and where it is (a value of any other kind
    is not looked into: this runs on every block of every row)."""
    found: list[tuple[Loc, bool]] = []
    for key, slots in number_fields(model).items():
        value = data.get(key)
        if isinstance(value, (bool, list, dict)):
            found.extend(slots.booleans(value, (key,)))
    return found


def rule_error(field: str, message: str) -> PydanticCustomError:
    """An error that names the offending field below the model that raised it.

    Model-level rules (one field conflicting with another) would otherwise be
    reported at the model's own path; the loader appends ``field`` to the path
    (an empty ``field`` names the model itself).
    """
    return PydanticCustomError("rule", "{message}", {"field": field, "message": message})


def rule_errors(title: str, problems: list[tuple[str, str]]) -> ValidationError:
    """Several rule errors of one block at once (every removed field, not only the first)."""
    details = [InitErrorDetails(type=rule_error(field, message), loc=(), input=None) for field, message in problems]
    return ValidationError.from_exception_data(title, details)


MOVED_TO_RUN_LIMITS = {
    "max_turns": "run_limits.max_turns",
    "turn_timeout": "run_limits.turn_timeout",
    "task_timeout": "run_limits.task_timeout",
}


class RejectsMovedLimits(StrictModel):
    """A block where run-time caps used to live: say where they live now, with the block's other problems."""

    @model_validator(mode="wrap")
    @classmethod
    def _reject_moved(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        moved = [key for key in MOVED_TO_RUN_LIMITS if key in data] if isinstance(data, dict) else []
        if not moved:
            return handler(data)
        problems = [
            InitErrorDetails(
                type=rule_error(key, f"no longer supported here; it lives under {MOVED_TO_RUN_LIMITS[key]}"),
                loc=(),
                input=None,
            )
            for key in moved
        ]
        try:
            handler({key: value for key, value in data.items() if key not in moved})
        except ValidationError as rest:
            problems += [_raised_again(error) for error in rest.errors()]
        raise ValidationError.from_exception_data(cls.__name__, problems)


def _raised_again(error: ErrorDetails) -> InitErrorDetails:
    """An error of a validation that failed, raised again beside others: its type, place, message and context kept
    (the loader reads all four)."""
    context = {**(error.get("ctx") or {}), "message": error["msg"]}
    return InitErrorDetails(
        type=PydanticCustomError(error["type"], "{message}", context), loc=error["loc"], input=error["input"]
    )


# The ``re`` flags a text pattern may take: IGNORECASE 2, LOCALE 4 (``re`` refuses it on text), MULTILINE 8, DOTALL 16,
# UNICODE 32, VERBOSE 64, ASCII 256. Not DEBUG (128: it prints the compiled pattern on stdout, into validate's
# output) nor the deprecated TEMPLATE (1); any other bit has no meaning (and one past a C int crashed the loader).
REGEX_FLAGS = int(re.IGNORECASE | re.LOCALE | re.MULTILINE | re.DOTALL | re.UNICODE | re.VERBOSE | re.ASCII)


def check_regex_flags(flags: int) -> int:
    """Refuse at load flags ``re`` has no use for here, or refuses together (ASCII with UNICODE)."""
    if flags & ~(REGEX_FLAGS | int(re.DEBUG)):
        raise ValueError(
            f"{flags} is not a sum of re flags (2 IGNORECASE, 8 MULTILINE, 16 DOTALL, 32 UNICODE, 64 VERBOSE, "
            "256 ASCII)"
        )
    if flags & re.DEBUG:
        raise ValueError("re.DEBUG (128) is refused: it prints the pattern's parse tree on stdout")
    try:
        re.compile("", flags)
    except ValueError as exc:  # re.error is a ValueError too
        raise ValueError(f"invalid re flags {flags}: {exc}") from None
    return flags


def check_regex(pattern: str | None, flags: int = 0) -> str | None:
    """Compile at load time so a broken pattern is an error, not a silent 0 (``flags`` already checked)."""
    if pattern is not None:
        try:
            re.compile(pattern, flags)
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
    return pattern


def is_absolute(path: str) -> bool:
    """Rooted on any system (``/x``, ``\\x``, ``C:x``): joined to a folder, it ignores the folder."""
    return path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path) is not None


def is_inside(relative: str, glob: bool = False) -> bool:
    """True when a relative path cannot leave the directory it is joined to. With ``glob``, a ``**`` segment may
    stand for no folder at all, so it is not counted as one (``**/..`` is the parent)."""
    if is_absolute(relative):
        return False
    depth = 0
    for part in re.split(r"[/\\]+", relative):
        if part in ("", ".") or (glob and part == "**"):
            continue
        depth += -1 if part == ".." else 1
        if depth < 0:
            return False
    return True


NAME_MAX = 255  # bytes in one file name (Linux's NAME_MAX)
PATH_MAX = 4096  # bytes in a whole path (Linux's PATH_MAX)


def file_name_problem(path: str) -> str | None:
    """Why no file system can hold ``path``, said at load: it would otherwise fail every row at run time, or stop a
    check of the file with no line named. (A backslash is part of a name here, as on Linux.)"""
    if "\0" in path:
        return "holds a NUL character, which no file name can"
    if len(path.encode("utf-8", "surrogatepass")) >= PATH_MAX:
        return f"is over the {PATH_MAX - 1} bytes a path can hold ({path[:20]}...)"
    longest = max(path.split("/"), key=lambda part: len(part.encode("utf-8", "surrogatepass")))
    if len(longest.encode("utf-8", "surrogatepass")) > NAME_MAX:
        return f"a name in it is over the {NAME_MAX} bytes a file name can hold ({longest[:20]}...)"
    return None


def valid_file_name(path: str) -> str:
    if problem := file_name_problem(path):
        raise ValueError(problem)
    return path


def check_inside(value: str, base: str, glob: bool = False) -> str:
    """Refuse at load a path that is absolute or climbs out of ``base`` with ``..``: it could only fail at grading.
    A ``${row.x}`` one waits for its row's value (each row's criteria are validated again, filled in); grading
    still refuses a path that leaves through a link."""
    valid_file_name(value)
    if "${row." not in value and not is_inside(value, glob):
        raise ValueError(f"must be a path relative to {base} that stays inside it (not absolute, no '..' out of it)")
    return value


def no_nul(value: str) -> str:
    """A shell command with a NUL could not be started: said at load, not as an ERROR of every row."""
    if "\0" in value:
        raise ValueError("holds a NUL character, which no command can carry")
    return value


ShellCommand = Annotated[str, StringConstraints(min_length=1), AfterValidator(no_nul)]


def in_sandbox(value: str) -> str:
    return check_inside(value, "the sandbox", glob=True)


def in_reference_folder(value: str) -> str:
    return check_inside(value, "the reference folder")


# A path a criterion reads in the sandbox (it may be a glob), or in the task's reference folder.
SandboxPath = Annotated[str, StringConstraints(min_length=1), AfterValidator(in_sandbox)]
ReferencePath = Annotated[str, StringConstraints(min_length=1), AfterValidator(in_reference_folder)]


def is_partial(info: ValidationInfo) -> bool:
    """True while validating a fragment (experiment defaults, a variant).

    Cross-field rules wait for the merged task: a fragment may legitimately
    set one half of a pair whose other half comes from another layer.
    """
    return bool(info.context and info.context.get("partial"))


class RegisteredNames:
    """Names the format accepts that the layers above register (agent types, sandbox drivers).

    Validated like a Literal (one of them, with a did-you-mean), shown as an
    enum in the JSON Schema, and extended by a registration, never by editing
    the format: ``core/agents/registry.py`` and ``core/sandbox/__init__.py``
    register the built-ins (``core/__init__.py`` imports both first).
    """

    def __init__(self, what: str, elsewhere: dict[str, str] | None = None) -> None:
        self.what = what
        self.names: list[str] = []
        # Names coder_eval knows that nothing here provides (yet): refused in one line that says so.
        self.elsewhere = dict(elsewhere or {})
        self.entry_point_group: str | None = None  # where installed packages add more (named in the refusal)

    def register(self, name: str) -> None:
        if name not in self.names:
            self.names.append(name)

    def check(self, value: str) -> str:
        """``value`` when registered; else the error a Literal would give, with a suggestion (and, for names
        that installed packages add, the unknown name, the installed ones and the entry-point group)."""
        refusal = self.not_installed(value)
        if refusal:
            raise ValueError(refusal)
        if value not in self.names:
            suggestion = did_you_mean(value, self.names)
            if self.entry_point_group is not None:
                raise ValueError(
                    f"unknown {self.what} {value!r}{suggestion}: installed are {', '.join(self.names)}; "
                    f"packages add more through the entry-point group {self.entry_point_group}"
                )
            choices = [repr(name) for name in self.names]
            listed = f"{', '.join(choices[:-1])} or {choices[-1]}" if len(choices) > 1 else "".join(choices)
            raise ValueError(f"Input should be {listed}{suggestion}")
        return value

    def not_installed(self, value: str) -> str | None:
        """The one-line refusal of a name known elsewhere that nothing here registered (None: not such a name)."""
        if value in self.names or value not in self.elsewhere:
            return None
        return f"{self.what} {value!r} is not installed here ({self.elsewhere[value]})"

    def schema(self, schema: dict[str, Any]) -> None:
        """The JSON Schema's ``enum``: what is registered when the schema is made (and null, for an optional field)."""
        nullable = any(option.get("type") == "null" for option in schema.get("anyOf", []))
        schema["enum"] = [*self.names, *([None] if nullable else [])]


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean `x`?)`` for the closest valid name other than ``name`` itself, or nothing."""
    close = difflib.get_close_matches(name, [c for c in choices if c != name], n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""
