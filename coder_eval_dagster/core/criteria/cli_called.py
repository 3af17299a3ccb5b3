"""`cli_called`: a recorded CLI invocation matched argv element by element."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from ..files import truncation_note
from ..models.base import StrictModel, check_regex, rule_error
from ..models.criterion import CriterionBase
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext

PREDICATES = ("equals", "contains", "matches_regex", "any_of", "present", "absent")


def _scalar_text(value: Any) -> str:
    """A bare YAML scalar as the string a mock records (booleans lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class FlagPredicate(StrictModel):
    """Exactly one predicate on one flag, optionally under several spellings."""

    equals: str | None = None
    contains: str | None = None
    matches_regex: str | None = None
    any_of: list[str] | None = None
    present: Literal[True] | None = None
    absent: Literal[True] | None = None
    flags: int | None = Field(default=None, ge=0)
    aliases: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _bare_scalar_is_equals(cls, data: Any) -> Any:
        if data is None or isinstance(data, (str, int, float, bool)):
            return {"equals": "" if data is None else _scalar_text(data)}
        return data

    @field_validator("equals", "contains", mode="before")
    @classmethod
    def _scalar_to_text(cls, value: Any) -> Any:
        return _scalar_text(value) if isinstance(value, (int, float, bool)) else value

    @model_validator(mode="after")
    def _one_predicate(self) -> FlagPredicate:
        chosen = [name for name in PREDICATES if getattr(self, name) is not None]
        if len(chosen) != 1:
            found = ", ".join(chosen) if chosen else "none"
            raise rule_error(
                "",
                f"exactly one predicate per flag ({', '.join(PREDICATES)}); found {found}",
            )
        if self.flags is not None and chosen[0] != "matches_regex":
            raise rule_error("flags", "regex flags are only allowed beside matches_regex")
        if self.matches_regex is not None:
            try:
                check_regex(self.matches_regex, self.flags or 0)
            except ValueError as exc:
                raise rule_error("matches_regex", str(exc)) from None
        return self

    @property
    def predicate(self) -> str:
        return next(name for name in PREDICATES if getattr(self, name) is not None)


class CliCalled(CriterionBase):
    type: Literal["cli_called"]
    log: str = Field(min_length=1)
    verb: str | list[str] = ""
    positional: list[str] = Field(default_factory=list)
    flags: dict[str, FlagPredicate] = Field(default_factory=dict)
    value_flags: list[str] = Field(default_factory=list)
    tool: str | None = None
    min_count: int = Field(default=1, ge=0)
    max_count: int | None = Field(default=None, ge=0)
    ignore_flags: list[str] = Field(default_factory=lambda: ["output"])

    @field_validator("positional", "value_flags", "ignore_flags", mode="before")
    @classmethod
    def _scalars_to_text(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [_scalar_text(v) if isinstance(v, (int, float, bool)) else v for v in value]
        return value

    @property
    def verb_tokens(self) -> list[str]:
        return self.verb.split() if isinstance(self.verb, str) else list(self.verb)

    @model_validator(mode="after")
    def _load_time_rules(self) -> CliCalled:
        if self.max_count is not None and self.max_count < self.min_count:
            raise rule_error("max_count", f"must be >= min_count ({self.min_count})")
        ignored = set(self.ignore_flags)
        for name, predicate in self.flags.items():
            if name in ignored:
                raise rule_error(
                    f"flags.{name}", "this flag is in ignore_flags, so it is dropped before predicates run"
                )
            for alias in predicate.aliases:
                if alias in self.flags and alias != name:
                    raise rule_error(f"flags.{name}.aliases", f"alias {alias!r} is another flag's key")
                if alias in ignored:
                    raise rule_error(f"flags.{name}.aliases", f"alias {alias!r} is in ignore_flags")
        owners: dict[str, str] = {}
        for name, predicate in self.flags.items():
            for alias in predicate.aliases:
                if owners.setdefault(alias, name) != name:
                    raise rule_error(
                        f"flags.{name}.aliases", f"alias {alias!r} already belongs to flag {owners[alias]!r}"
                    )
        return self


@dataclass
class Invocation:
    """One argv split into positionals and flags (name -> values; None for a switch)."""

    positionals: list[str]
    flags: dict[str, list[str | None]]


def value_bearing(criterion: CliCalled) -> set[str]:
    """Flags that take the next token: declared, never guessed.

    A flag with a value predicate (and its aliases), every ``value_flags``
    entry, and ``output`` while it is ignored (it carries a value by default).
    """
    names = set(criterion.value_flags)
    for name, predicate in criterion.flags.items():
        if predicate.predicate not in ("present", "absent"):
            names.update([name, *predicate.aliases])
    if "output" in criterion.ignore_flags:
        names.add("output")
    return names


def parse_argv(argv: list[str], takes_value: set[str]) -> Invocation:
    positionals: list[str] = []
    flags: dict[str, list[str | None]] = {}
    index, options_done = 0, False
    while index < len(argv):
        token = argv[index]
        index += 1
        if options_done or token == "-" or not token.startswith("-"):
            positionals.append(token)
            continue
        if token == "--":
            options_done = True
            continue
        name, equals, value = token.lstrip("-").partition("=")
        if equals:
            flags.setdefault(name, []).append(value)
        elif name in takes_value and index < len(argv):
            flags.setdefault(name, []).append(argv[index])
            index += 1
        else:
            flags.setdefault(name, []).append(None)
    return Invocation(positionals, flags)


def _predicate_holds(predicate: FlagPredicate, names: list[str], invocation: Invocation) -> bool:
    present = any(name in invocation.flags for name in names)
    if predicate.present:
        return present
    if predicate.absent:
        return not present
    values = [v for name in names for v in invocation.flags.get(name, []) if v is not None]
    if predicate.equals is not None:
        return predicate.equals in values
    if predicate.contains is not None:
        return any(predicate.contains in v for v in values)
    if predicate.matches_regex is not None:
        return any(re.search(predicate.matches_regex, v, predicate.flags or 0) for v in values)
    return any(v in (predicate.any_of or []) for v in values)


def matches(criterion: CliCalled, record: dict[str, Any], takes_value: set[str]) -> bool:
    if criterion.tool is not None and record.get("tool") != criterion.tool:
        return False
    invocation = parse_argv(record["argv"], takes_value)
    for ignored in criterion.ignore_flags:
        invocation.flags.pop(ignored, None)
    verb = criterion.verb_tokens
    rest = invocation.positionals[len(verb) :]
    if invocation.positionals[: len(verb)] != verb or rest[: len(criterion.positional)] != criterion.positional:
        return False
    return all(
        _predicate_holds(predicate, [name, *predicate.aliases], invocation)
        for name, predicate in criterion.flags.items()
    )


def read_log(ctx: CheckContext, relative: str) -> tuple[list[dict[str, Any]], bool]:
    """Every record of the log, and whether it was cut at the read cap; an unusable line fails the check.

    A log cut at the cap loses its last, partial line.
    """
    text, truncated = ctx.read_text(relative)
    lines = text.splitlines()[:-1] if truncated else text.splitlines()
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise ValueError(f"{relative}:{number}: not JSON") from None
        if not isinstance(record, dict):
            raise ValueError(f"{relative}:{number}: not a JSON object")
        argv = record.get("argv")
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise ValueError(f"{relative}:{number}: argv is not a list of strings")
        records.append(record)
    return records, truncated


@checks(CliCalled)
def check(criterion: CliCalled, ctx: CheckContext) -> Outcome:
    records, truncated = read_log(ctx, criterion.log)
    takes_value = value_bearing(criterion)
    matched = [r["argv"] for r in records if matches(criterion, r, takes_value)]
    high = criterion.max_count
    passed = len(matched) >= criterion.min_count and (high is None or len(matched) <= high)
    details = {"records": len(records), "matches": len(matched), "matched_argv": matched[:20]}
    details |= truncation_note(criterion.log, truncated)
    return Outcome(1.0 if passed else 0.0, details)
