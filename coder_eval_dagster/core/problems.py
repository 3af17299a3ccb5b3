"""Input problems reported as `<path>:<line>: <dotted.field.path>: <message>`."""

from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .models.base import did_you_mean

Loc = tuple[str | int, ...]
DOCUMENT = "(document)"


@dataclass(frozen=True)
class Problem:
    path: str
    line: int | None  # None: not about a line of a file (a missing path, a command-line option)
    field: str
    message: str

    def __str__(self) -> str:
        message = " ".join(self.message.split())  # one problem, one line
        if self.line is None:
            return f"{message}: {self.path}" if self.field == DOCUMENT else f"{self.path}: {self.field}: {message}"
        return f"{self.path}:{self.line}: {self.field}: {message}"


def models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (through Optional, Union, list, dict and Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in models_in(arg)]


def _of_type(models: list[type[BaseModel]], data: Any) -> list[type[BaseModel]]:
    """A criterion block's own model when its ``type`` names one (the union's other members are not its fields)."""
    kind = data.get("type") if isinstance(data, dict) else None
    named = [
        m for m in models if "type" in m.model_fields and kind in typing.get_args(m.model_fields["type"].annotation)
    ]
    return named or models


def block_models(annotation: Any, data: Any, loc: Loc) -> list[type[BaseModel]]:
    """The models of the block at ``loc`` in ``data``, a document of type ``annotation`` (empty: a free-form value)."""
    current = data
    for part in loc:
        if not isinstance(part, int):  # (a list index: the items' models carry on)
            models = _of_type(models_in(annotation), current)
            fields = {name: info.annotation for m in models for name, info in m.model_fields.items()}
            if part not in fields:
                return []
            annotation = fields[part]
        current = _child(current, part)[1]
    return _of_type(models_in(annotation), current)


def _nested_path(models: list[type[BaseModel]], name: str) -> str | None:
    """``python.env_packages``: where below this block a field of that very name lives (one or two levels). Not in
    a list's items: ``success_criteria.timeout`` would name no field (an item's is ``success_criteria.0.timeout``),
    and a top-level ``timeout`` is no criterion's."""
    for model in models:
        for field, info in model.model_fields.items():
            if _is_list(info.annotation):
                continue
            for inner in models_in(info.annotation):
                if name in inner.model_fields:
                    return f"{field}.{name}"
    return None


def _is_list(annotation: Any) -> bool:
    """``list[X]`` or ``list[X] | None``."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    options = typing.get_args(annotation) if union else (annotation,)
    return any(typing.get_origin(option) is list for option in options)


UNKNOWN_FIELD = "unknown field (not part of the format)"  # then the hint


def unknown_field_hint(annotation: Any, data: Any, loc: Loc, prefix: Loc = ()) -> str:
    """The did-you-mean of an unknown field: a close field of its block (a misspelling: ``variant`` for
    ``variant_id``), else where that very name lives below the block (``env_packages`` in ``python``).

    Never a name from another block, and never the rejected name itself.
    """
    models = block_models(annotation, data, loc[:-1])
    name = str(loc[-1])
    close = did_you_mean(name, [field for model in models for field in model.model_fields])
    nested = _nested_path(models, name)
    if close or nested is None:
        return close
    block = prefix + loc[:-1]
    return f" (did you mean `{dotted(block) + '.' if block else ''}{nested}`?)"


class InvalidInput(Exception):
    """One or more problems in the user's files or command line."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def dotted(loc: Loc) -> str:
    """``a.0.b``; a key that is empty or holds white space is quoted so the path stays one token."""
    if not loc:
        return DOCUMENT
    return ".".join(_segment(part) for part in loc)


def _segment(part: str | int) -> str:
    text = str(part)
    if text and not any(c.isspace() for c in text):
        return text
    return '"' + "".join(f"\\x{ord(c):02x}" if c.isspace() else c for c in text) + '"'


def data_loc(data: Any, loc: Loc) -> Loc:
    """Drop the union-tag and validator segments pydantic adds to an error location.

    Pydantic reports ``success_criteria.0.file_exists.path`` for a discriminated
    union; users wrote ``success_criteria.0.path``. A segment is kept when it
    indexes the data, or when it is the last one (a missing field).
    """
    kept: list[str | int] = []
    current = data
    for position, part in enumerate(loc):
        found, child = _child(current, part)
        if found:
            kept.append(part)
            current = child
        elif _is_wrapper_segment(current, part, loc, position):
            continue
        else:
            kept.append(part)
            current = None
    return tuple(kept)


def _child(current: Any, part: str | int) -> tuple[bool, Any]:
    """Whether ``part`` indexes ``current`` (a key of a mapping, an index of a list), and the value there."""
    if isinstance(current, dict) and part in current:
        return True, current[part]
    if isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
        return True, current[part]
    return False, None


def _is_wrapper_segment(current: Any, part: str | int, loc: Loc, position: int) -> bool:
    if not isinstance(part, str):
        return False
    if part.startswith("function-") and "[" in part:  # a validator's name, last too (the value is no mapping)
        return True
    if not isinstance(current, dict):
        return False
    if current.get("type") == part:  # discriminated-union tag
        return True
    # union-member names such as "dict[str,...]"
    return ("[" in part or part in ("str", "dict", "list")) and position < len(loc) - 1


def problems_from_validation(
    exc: ValidationError, data: Any, path: str, line_of: Any, prefix: Loc = (), *, model: Any
) -> list[Problem]:
    """Translate a pydantic error of validating ``data`` as ``model`` into problems with the user's field names and
    lines."""
    problems = []
    errors = exc.errors(include_url=False)
    for error in errors:
        if _other_arm_said_it(error, errors):
            continue
        loc = data_loc(data, tuple(error["loc"]))
        if error["type"] == "rule":
            loc = loc + tuple(_split_field(error["ctx"]["field"]))
        message = error["msg"]
        if error["type"] == "value_error" and message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        elif error["type"] == "extra_forbidden":
            message = UNKNOWN_FIELD + unknown_field_hint(model, data, loc, prefix)
        elif error["type"] == "union_tag_invalid":
            tag, expected = str(error["ctx"].get("tag")), str(error["ctx"].get("expected_tags"))
            hint = did_you_mean(tag, _quoted(expected))
            message = f"unknown type {clipped(repr(tag), 80)}{hint}; expected one of {expected}"
        elif error["type"] == "literal_error":
            message += did_you_mean(str(error.get("input")), _quoted(str(error["ctx"].get("expected", ""))))
        elif error["type"] == "list_type" and loc and isinstance(loc[-1], str) and error.get("input") is not None:
            # one value where a list belongs (``tags: smoke``): the same value as a one-item list
            example = yaml.safe_dump([error["input"]], default_flow_style=True, sort_keys=False, width=10_000)
            example = example.strip() if len(example) <= 80 else example[:72] + " ...]"
            message += f": write it as a list, e.g. {loc[-1]}: {example}"
        elif error["type"] in ("model_type", "model_attributes_type", "dict_type"):  # not the model's class name
            message = not_a_mapping(error.get("input"))
        elif error["type"] == "union_tag_not_found":  # the block has no ``type``: said of its ``type``
            loc, message = (*loc, str(error["ctx"].get("discriminator", "type")).strip("'")), "Field required"
        full = prefix + loc
        problems.append(Problem(path, line_of(full), dotted(full), message))
    return _unique(sorted(problems, key=in_the_files_order))


def in_the_files_order(problem: Problem) -> tuple[bool, int]:
    """Problems as the file reads from the top (pydantic says them in its models' field order); one of no line
    last."""
    return problem.line is None, problem.line or 0


def _other_arm_said_it(error: ErrorDetails, errors: list[ErrorDetails]) -> bool:
    """A mapping (or list) refused by a union's literal arm (``network: {allow: [...]}`` is no network name) when
    the union's other arm says what is wrong with it: the literal's line would only distract."""
    if error["type"] != "literal_error" or not isinstance(error.get("input"), dict | list):
        return False
    union, arm = error["loc"][:-1], error["loc"][-1]
    return any(other["loc"][: len(union)] == union and other["loc"][len(union) :][:1] != (arm,) for other in errors)


def not_a_mapping(value: Any) -> str:
    """What is wrong with ``value`` where a mapping belongs (a block of a task file, a run folder's JSON file)."""
    return f"expected a mapping (key: value lines, or {{key: value}}), got {_shown(value)}"


def _shown(value: Any) -> str:
    """A value the user wrote where a mapping belongs, named by its YAML kind."""
    kind = {str: "the text", bool: "the boolean", int: "the number", float: "the number", list: "a list"}
    if value is None:
        return "nothing (null)"
    return f"{kind.get(type(value), type(value).__name__)} {clipped(repr(value), 40)}"


def clipped(text: str, limit: int) -> str:
    """``text`` as a message quotes what the user wrote: at most ``limit`` characters, a longer one cut with ``...``
    (a value may be any length)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _quoted(text: str) -> list[str]:
    """The names in pydantic's ``'a', 'b' or 'c'``."""
    return re.findall(r"'([^']*)'", text)


def _split_field(field: str) -> list[str | int]:
    return [int(part) if part.isdigit() else part for part in field.split(".") if part]


def _unique(problems: list[Problem]) -> list[Problem]:
    return list(dict.fromkeys(problems))  # the first of each, in order


def not_utf8(path: object, field: str, exc: UnicodeDecodeError, what: str) -> Problem:
    """``what``, at the line and column of the first byte that is not UTF-8 (the decoder gives a whole-file
    offset)."""
    data = exc.object
    line, before = line_at(data, exc.start)
    byte = data[exc.start : exc.start + 1].hex()
    why = f"{what}: byte 0x{byte} at column {len(before) + 1} is not UTF-8 ({exc.reason})"
    return Problem(str(path), line, field, why)


def line_at(data: bytes, offset: int) -> tuple[int, bytes]:
    """The line (from 1) of the byte at ``offset`` in a file's bytes, and what its line holds before it."""
    return data.count(b"\n", 0, offset) + 1, data[data.rfind(b"\n", 0, offset) + 1 : offset]
