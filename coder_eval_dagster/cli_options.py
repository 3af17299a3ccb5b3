"""The command line's options, generated from the models that declare them (``RunSpec``, ``RunOptions``).

A field with a ``cli`` extra (``core.run_spec.cli``) becomes an argument:
its flags, its description as help, the model's default, and a type checked
at parse time from its annotation and spelling (a whole number within its
bounds, one of its choices, a list given by repeating the flag or
comma-separated, a switch for a bool), so that a bad value is one argparse
line, exit 2.
"""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo


def add_model_arguments(
    parser: argparse.ArgumentParser, model: type[BaseModel], only: Iterable[str] | None = None
) -> None:
    """Every field of ``model`` that has flags (or only those named), as ``parser`` arguments."""
    wanted = set(only) if only is not None else None
    for name, info in model.model_fields.items():
        spelling = _spelling(info)
        if spelling is None or (wanted is not None and name not in wanted):
            continue
        flags = spelling["flags"]
        if not flags[0].startswith("-"):
            parser.add_argument(
                name, nargs="*", default=_default(info), metavar=spelling["metavar"], help=info.description
            )
            continue
        parser.add_argument(*flags, dest=name, help=info.description, **_argument(info, spelling))


def model_values(model: type[BaseModel], args: argparse.Namespace) -> dict[str, Any]:
    """The parsed values of ``model``'s fields present in ``args`` (to build the model from)."""
    return {name: getattr(args, name) for name in model.model_fields if hasattr(args, name)}


def flags_of(model: type[BaseModel], name: str | None = None) -> list[str]:
    """The flags of field ``name``, or of every field of the model (the docs list them all)."""
    if name is None:
        fields = list(model.model_fields.values())
    else:
        fields = [model.model_fields[name]] if name in model.model_fields else []
    return [flag for info in fields for flag in (_spelling(info) or {"flags": []})["flags"] if flag.startswith("-")]


def _spelling(info: FieldInfo) -> dict[str, Any] | None:
    extra = info.json_schema_extra
    found = extra.get("cli") if isinstance(extra, dict) else None
    return found if isinstance(found, dict) else None


def _default(info: FieldInfo) -> Any:
    return info.get_default(call_default_factory=True)


def _argument(info: FieldInfo, spelling: dict[str, Any]) -> dict[str, Any]:
    """``add_argument``'s keywords for a flagged field."""
    annotation = _without_none(info.annotation)
    keywords: dict[str, Any] = {"default": _default(info)}
    if spelling["metavar"]:
        keywords["metavar"] = spelling["metavar"]
    if annotation is bool:
        return {"action": "store_true", "default": False}
    if typing.get_origin(annotation) is list:
        if spelling["repeatable"]:
            return {**keywords, "action": "append"}
        return {**keywords, "type": _comma_list}
    if spelling.get("choices"):
        return {**keywords, "choices": spelling["choices"]}
    if annotation is int:
        return {**keywords, "type": _whole_number(_lower_bound(info))}
    return keywords


def _without_none(annotation: Any) -> Any:
    """``X | None`` -> ``X``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kept = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return kept[0] if len(kept) == 1 else annotation
    return annotation


def _lower_bound(info: FieldInfo) -> int | None:
    return next((int(item.ge) for item in info.metadata if getattr(item, "ge", None) is not None), None)


def _whole_number(minimum: int | None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _comma_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
