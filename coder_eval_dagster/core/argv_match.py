"""Matching one recorded argv against a pattern: the semantics of `cli_called` and of `record_cli` response rules.

Standard library only and free of package imports: the `record_cli` shims
carry a copy of this file into the sandbox (``cli_mocks/argv_match.py``), so
the pattern that picks a canned response is matched exactly as the criterion
that grades the call matches it. A pattern is the plain dict that
``models.cli_match.ArgvPattern.spec()`` lowers it to.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Flags = dict[str, list[str]]  # flag name -> its values ("" for a switch, as coder_eval records one)
Search = Callable[[str, str, int], bool]  # (pattern, text, re flags): whether the pattern occurs


def re_search(pattern: str, text: str, flags: int) -> bool:
    """The shims' search; the criterion passes one with a deadline (``core.patterns``), which the sandbox's copy
    cannot import."""
    return re.search(pattern, text, flags) is not None


def parse_argv(argv: list[str], takes_value: set[str]) -> tuple[list[str], Flags]:
    """The positionals and the flags of an argv; only a declared flag takes the next token as its value.

    A switch's value is ``""``, so is a declared flag's that ends the argv (``models set --model``): coder_eval
    records both so, and a value predicate sees it (``equals: ""`` matches it)."""
    positionals: list[str] = []
    flags: Flags = {}
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
            flags.setdefault(name, []).append("")
    return positionals, flags


def _holds(predicate: dict[str, Any], flags: Flags, search: Search) -> bool:
    names = predicate["names"]
    present = any(name in flags for name in names)
    kind, expected = predicate["predicate"], predicate["value"]
    if kind == "present":
        return present
    if kind == "absent":
        return not present
    values = [v for name in names for v in flags.get(name, [])]
    if kind == "equals":
        return expected in values
    if kind == "contains":
        return any(expected in v for v in values)
    if kind == "matches_regex":
        return any(search(expected, v, predicate["regex_flags"]) for v in values)
    return any(v in expected for v in values)  # any_of


def _after_verb(spec: dict[str, Any], positionals: list[str]) -> list[str] | None:
    """What follows the first verb spelling that prefixes the positionals (None: no spelling does)."""
    for verb in spec["verbs"]:
        if positionals[: len(verb)] == verb:
            return positionals[len(verb) :]
    return None


def matches(spec: dict[str, Any], argv: list[str], search: Search = re_search) -> bool:
    """Does this invocation match the pattern (verb, positionals, flag predicates)?"""
    positionals, flags = parse_argv(argv, set(spec["takes_value"]))
    for ignored in spec["ignore_flags"]:
        flags.pop(ignored, None)
    rest = _after_verb(spec, positionals)
    if rest is None:
        return False
    wanted = spec["positional"]
    if (rest != wanted) if spec["exact_positional"] else (rest[: len(wanted)] != wanted):
        return False
    return all(_holds(predicate, flags, search) for predicate in spec["flags"])
