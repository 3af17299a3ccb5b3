"""`cli_called`: a recorded CLI invocation matched argv element by element."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from ..models.base import StrictModel, check_regex, rule_error
from .base import CriterionBase, Scoring

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
    scoring: ClassVar[Scoring] = "binary"
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
