"""Shared building blocks of the task-format models."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError, ValidationInfo, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

# Task, row, variant and experiment ids become directory names (and Dagster
# partition keys), so they keep to a safe alphabet that cannot spell ``.``,
# ``..`` or a separator, and to a length that keeps run paths well short of
# the file system's limits.
SAFE_ID = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$"
SAFE_ID_RE = re.compile(SAFE_ID)
MAX_ID_LENGTH = 100
SafeId = Annotated[str, StringConstraints(pattern=SAFE_ID, max_length=MAX_ID_LENGTH)]


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be an id (None: it can), for ids checked outside a model (row ids)."""
    if len(value) > MAX_ID_LENGTH:
        return f"is {len(value)} characters long; ids are at most {MAX_ID_LENGTH} (they become directory names)"
    if not SAFE_ID_RE.match(value):
        return f"must match {SAFE_ID} (it becomes a directory name)"
    return None


class StrictModel(BaseModel):
    """Every block of the format rejects unknown keys (the guide's extra="forbid"), and inf or nan where a number
    goes (a weight of .inf passed validation and failed the run)."""

    model_config = ConfigDict(extra="forbid", frozen=False, validate_default=False, allow_inf_nan=False)


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
    """A block where run-time caps used to live: say where they live now."""

    @model_validator(mode="before")
    @classmethod
    def _reject_moved(cls, data: Any) -> Any:
        if isinstance(data, dict):
            moved = [(key, target) for key, target in MOVED_TO_RUN_LIMITS.items() if key in data]
            if moved:
                raise rule_errors(
                    cls.__name__, [(key, f"no longer supported here; it lives under {target}") for key, target in moved]
                )
        return data


def check_regex(pattern: str | None, flags: int = 0) -> str | None:
    """Compile at load time so a broken pattern is an error, not a silent 0."""
    if pattern is not None:
        try:
            re.compile(pattern, flags)
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
    return pattern


def is_inside(relative: str) -> bool:
    """True when a relative path cannot leave the directory it is joined to."""
    if relative.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", relative):
        return False
    depth = 0
    for part in re.split(r"[/\\]+", relative):
        if part in ("", "."):
            continue
        depth += -1 if part == ".." else 1
        if depth < 0:
            return False
    return True


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
