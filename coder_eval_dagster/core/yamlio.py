"""YAML documents that remember the line of every key and list item."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from .problems import DOCUMENT, InvalidInput, Loc, Problem

_Base: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """Safe loading with YAML 1.2 booleans: only true/false are booleans.

    YAML 1.1 reads ``yes``, ``no``, ``on`` and ``off`` as booleans, which turns
    the guide's ``flags: {yes: {present: true}}`` into a ``True`` key. Values
    such as ``enabled: yes`` still work: the models coerce them.
    """

    yaml_implicit_resolvers: ClassVar[dict] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_yaml_text(text: str) -> Any:
    """Parse YAML text with the project's loader (used for -D values too)."""
    return yaml.load(text, Loader=_Loader)


@dataclass
class Document:
    """Parsed YAML data plus a line number (1-based) for every path in it."""

    path: Path
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int:
        """The line of the deepest prefix of ``loc`` present in this file (else 1)."""
        for end in range(len(loc), 0, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return 1


def load_document(path: Path) -> Document:
    """Parse one YAML file; syntax errors and duplicate keys become problems."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput([Problem(str(path), 1, DOCUMENT, f"cannot read file: {exc}")]) from None
    return parse_document(path, text)


def parse_document(path: Path, text: str) -> Document:
    try:
        node = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        where = f" (line {line}, column {mark.column + 1})" if mark else ""
        hint = ""
        if exc.problem and "mapping values are not allowed" in exc.problem:
            hint = '; a value that contains ": " must be quoted, e.g. description: "a: b"'
        message = f"YAML syntax error{where}: {exc.problem}{hint}"
        raise InvalidInput([Problem(str(path), line, DOCUMENT, message)]) from None
    except yaml.YAMLError as exc:
        raise InvalidInput([Problem(str(path), 1, DOCUMENT, f"YAML error: {exc}")]) from None
    doc = Document(path, data)
    if node is not None:
        problems: list[Problem] = []
        _record_lines(node, (), doc.lines, problems, str(path))
        if problems:
            raise InvalidInput(problems)
    return doc


def _record_lines(node: yaml.Node, loc: Loc, lines: dict[Loc, int], problems: list[Problem], path: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key == "<<":  # merge keys: their contents were merged by the loader
                continue
            child = (*loc, key)
            if key in seen:
                problems.append(Problem(path, key_node.start_mark.line + 1, ".".join(map(str, child)), "duplicate key"))
            seen.add(key)
            lines[child] = key_node.start_mark.line + 1
            _record_lines(value_node, child, lines, problems, path)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*loc, index)
            lines[child] = item.start_mark.line + 1
            _record_lines(item, child, lines, problems, path)
