"""A pattern over one CLI invocation's argv: what `cli_called` grades and what a `record_cli` response answers.

Both surfaces declare the same facets with the same rules, and lower them to
the plain dict ``core/argv_match.py`` matches (the shims in the sandbox carry
a copy of that module), so the pattern that serves a canned response is the
pattern that grades the call.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from .base import StrictModel, check_regex, check_regex_flags, rule_error

PREDICATES = ("equals", "contains", "matches_regex", "any_of", "present", "absent")


def scalar_text(value: Any) -> str:
    """A bare YAML scalar as the string a mock records (booleans lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _scalars_to_text(value: Any) -> Any:
    if isinstance(value, list):
        return [scalar_text(v) if isinstance(v, (int, float, bool)) else v for v in value]
    return value


class FlagPredicate(StrictModel):
    """Exactly one predicate on one flag, optionally under several spellings."""

    equals: str | None = None
    contains: str | None = None
    matches_regex: str | None = None
    any_of: list[str] | None = Field(default=None, min_length=1)  # empty matches nothing: a guard would pass
    present: Literal[True] | None = None
    absent: Literal[True] | None = None
    flags: Annotated[int, Field(ge=0), AfterValidator(check_regex_flags)] | None = None
    aliases: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _bare_scalar_is_equals(cls, data: Any) -> Any:
        if data is None or isinstance(data, (str, int, float, bool)):
            return {"equals": "" if data is None else scalar_text(data)}
        return data

    @field_validator("equals", "contains", mode="before")
    @classmethod
    def _scalar_to_text(cls, value: Any) -> Any:
        return scalar_text(value) if isinstance(value, (int, float, bool)) else value

    @model_validator(mode="after")
    def _one_predicate(self) -> FlagPredicate:
        chosen = [name for name in PREDICATES if getattr(self, name) is not None]
        if len(chosen) != 1:
            found = ", ".join(chosen) if chosen else "none"
            raise rule_error("", f"exactly one predicate per flag ({', '.join(PREDICATES)}); found {found}")
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


BLANK_VERB = (
    "must not be blank: a blank verb is an empty prefix and matches every invocation (drop it to match any verb)"
)


def _no_flag_token(field: str, tokens: list[str]) -> None:
    """Refuse a verb token the matcher reads as a flag (``--all``, ``-f``, ``--``): a verb is compared with the
    non-flag arguments only, so such a verb could never match (and a ``max_count: 0`` guard on it always passes)."""
    for token in tokens:
        if token.startswith("-") and token != "-":
            name = token.lstrip("-").split("=")[0] or "<name>"
            raise rule_error(
                field,
                f"verb token {token!r} looks like a flag. A verb matches only the non-flag arguments, so a flag "
                f"inside it can never match. Put it in flags: instead, e.g. flags: {{{name}: {{present: true}}}}",
            )


class ArgvPattern(StrictModel):
    """Verb (or alternative verbs), positionals and flag predicates, all ANDed; unmentioned flags are ignored."""

    verb: str | list[str] | None = None  # None: any verb; a blank one is refused (it would match every call)
    verb_any_of: list[str] | None = None
    positional: list[str] = Field(default_factory=list)
    exact_positional: bool = False
    flags: dict[str, FlagPredicate] = Field(default_factory=dict)
    value_flags: list[str] = Field(default_factory=list)
    ignore_flags: list[str] = Field(default_factory=lambda: ["output"])

    _text_lists = field_validator("positional", "value_flags", "ignore_flags", mode="before")(_scalars_to_text)

    @property
    def verbs(self) -> list[list[str]]:
        """Each accepted verb as its tokens (one empty verb: any invocation)."""
        if self.verb_any_of is not None:
            return [spelling.split() for spelling in self.verb_any_of]
        if self.verb is None:
            return [[]]
        return [self.verb.split() if isinstance(self.verb, str) else list(self.verb)]

    @model_validator(mode="after")
    def _pattern_rules(self) -> ArgvPattern:
        self._check_verbs()
        ignored = set(self.ignore_flags)
        owners: dict[str, str] = {}
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
                if owners.setdefault(alias, name) != name:
                    raise rule_error(
                        f"flags.{name}.aliases", f"alias {alias!r} already belongs to flag {owners[alias]!r}"
                    )
        return self

    def _check_verbs(self) -> None:
        """A verb is never blank nor holds a flag; verb_any_of: instead of verb, never empty or blank, and no entry
        that another one already covers (as coder_eval refuses them: each would match what it does not say).

        Run on each row's filled-in criterion too, so a ``${row.verb}`` a row leaves blank is refused for that row.
        """
        if self.verb_any_of is None:
            if self.verb is not None:
                tokens = self.verbs[0]
                if not tokens:
                    raise rule_error("verb", BLANK_VERB)
                _no_flag_token("verb", tokens)
            return
        if self.verb is not None:
            raise rule_error("verb_any_of", "set verb or verb_any_of, not both")
        if not self.verb_any_of or any(not spelling.split() for spelling in self.verb_any_of):
            raise rule_error("verb_any_of", "must list whole verbs, none of them blank (drop it to match any verb)")
        for index, tokens in enumerate(self.verbs):
            _no_flag_token(f"verb_any_of.{index}", tokens)
        for first, second in itertools.combinations(self.verbs, 2):
            shorter, longer = sorted((first, second), key=len)
            if longer[: len(shorter)] == shorter:
                raise rule_error(
                    "verb_any_of",
                    f"{' '.join(shorter)!r} already covers {' '.join(longer)!r} (a verb is a prefix): list it once",
                )

    def takes_value(self) -> set[str]:
        """Flags that take the next token: declared, never guessed.

        A flag with a value predicate (and its aliases), every ``value_flags``
        entry, and ``output`` while it is ignored (it carries a value by default).
        """
        names = set(self.value_flags)
        for name, predicate in self.flags.items():
            if predicate.predicate not in ("present", "absent"):
                names.update([name, *predicate.aliases])
        if "output" in self.ignore_flags:
            names.add("output")
        return names

    def spec(self) -> dict[str, Any]:
        """The plain dict ``core/argv_match.py`` matches (JSON: a shim in the sandbox reads the same)."""
        return {
            "verbs": self.verbs,
            "positional": list(self.positional),
            "exact_positional": self.exact_positional,
            "flags": [
                {
                    "names": [name, *predicate.aliases],
                    "predicate": predicate.predicate,
                    "value": getattr(predicate, predicate.predicate),
                    "regex_flags": predicate.flags or 0,
                }
                for name, predicate in self.flags.items()
            ],
            "takes_value": sorted(self.takes_value()),
            "ignore_flags": list(self.ignore_flags),
        }
