"""YAML documents that remember the line of every key and list item."""

from __future__ import annotations

import datetime
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import yaml

from .files import MAX_DOCUMENT_BYTES, UnreadableFile, read_input_text
from .problems import DOCUMENT, InvalidInput, Loc, Problem, dotted, line_at, not_utf8

if TYPE_CHECKING:
    _Base = yaml.SafeLoader  # the C loader below has the same interface
else:
    _Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when PyYAML was built with it

# Aliases let a few hundred bytes stand for billions of values ("billion laughs"):
# a document is refused when its aliases add more values, or it nests deeper, than this.
MAX_ALIAS_EXPANSION = 250_000
MAX_DEPTH = 100


class _Loader(_Base):
    """Safe loading with YAML 1.2 booleans: only true/false are booleans.

    YAML 1.1 reads ``yes``, ``no``, ``on`` and ``off`` as booleans, which turns
    the guide's ``flags: {yes: {present: true}}`` into a ``True`` key. Values
    such as ``enabled: yes`` still work: the models coerce them.
    """

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """A value its tag cannot read (``!!int abc``, ``!!bool maybe``, an integer of more digits than Python reads)
        is a YAMLError at its node, as PyYAML's own constructor errors are, not a bare ValueError or KeyError."""
        try:
            return super().construct_object(node, deep)
        except (ValueError, LookupError, ArithmeticError, AttributeError, TypeError) as exc:
            raise yaml.constructor.ConstructorError(None, None, _unreadable(node, exc), node.start_mark) from None


def _unreadable(node: yaml.Node, exc: Exception) -> str:
    """What could not be read, shortened (an integer too long to read is thousands of digits), and why."""
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    text = node.value if isinstance(node.value, str) else ""
    shown = repr(text if len(text) <= 40 else text[:40] + "...")
    why = str(exc).split(";")[0] if isinstance(exc, ValueError) else ""  # a KeyError's text is only the value
    return f"the value {shown} cannot be read as {tag}" + (f" ({why})" if why else "")


# PyYAML keeps the resolvers on the class (set here, not in the class body, as the stubs declare the table an
# instance attribute and ruff wants a mutable class attribute to be a ClassVar).
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_yaml_text(text: str) -> Any:
    """Parse YAML text with the project's loader (used for -D values too)."""
    return yaml.load(text, Loader=_Loader)


def key_not_text(value: Any, seen: set[int] | None = None) -> str | None:
    """Why a loaded value (a -D value: no lines to say it at) holds a key that is not text, as a document's is said
    (an alias that holds itself, ``&a [*a]``, is walked once)."""
    seen = set() if seen is None else seen
    if not isinstance(value, list | dict) or id(value) in seen:
        return None
    seen.add(id(value))
    if isinstance(value, list):
        return next((why for item in value if (why := key_not_text(item, seen))), None)
    for key, item in value.items():
        if not isinstance(key, str):
            kind = _KEY_KINDS.get(_YAML_KIND_OF.get(type(key), ""), type(key).__name__)
            written = "null" if key is None else str(key).lower() if isinstance(key, bool) else str(key)
            return f"a key must be text, and {written!r} is read as {kind}: write it in quotes"
        if why := key_not_text(item, seen):
            return why
    return None


@dataclass
class Document:
    """Parsed YAML data plus a line number (1-based) for every path in it."""

    path: Path
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int:
        """The line of the deepest prefix of ``loc`` present in this file (else 1)."""
        for end in range(len(loc), 0, -1):
            prefix = tuple(loc[:end])
            # a key that is not text (``2: x``) is its text here, its value in the loaded data
            line = self.lines.get(prefix) or self.lines.get((*prefix[:-1], str(prefix[-1])))
            if line is not None:
                return line
        return 1

    def problem_at(self, loc: Loc, message: str) -> Problem:
        """A problem with the field at ``loc`` of this file, at its line."""
        return Problem(str(self.path), self.line_of(loc), dotted(loc), message)


def load_document(path: Path) -> Document:
    """Parse one YAML file; syntax errors and duplicate keys become problems."""
    try:
        text = read_input_text(path, MAX_DOCUMENT_BYTES)
    except UnicodeDecodeError as exc:
        raise InvalidInput([not_utf8(path, DOCUMENT, exc, "cannot read file (save it as UTF-8)")]) from None
    except (OSError, UnreadableFile) as exc:
        message = str(exc) if isinstance(exc, UnreadableFile) else f"cannot read file: {exc}"
        if path.is_symlink() and not path.exists():
            message = f"a broken link, to {os.readlink(path)}"
        raise InvalidInput([Problem(str(path), 1, DOCUMENT, message)]) from None
    return parse_document(path, text)


TAB_HINT = "a tab cannot indent YAML: indent with spaces"
_MAPPING_VALUES = "mapping values are not allowed"
# What a parser's message means for the one who wrote the file (its problem text -> a hint).
_SYNTAX_HINTS = {
    _MAPPING_VALUES: 'a value that contains ": " must be quoted, e.g. description: "a: b"',
    "tab character": TAB_HINT,
    "found unknown escape character": (
        "inside double quotes a backslash starts an escape: write \"\\\\d\", or use single quotes: '\\d'"
    ),
}
DEEPER_HINT = "check the indentation: this line is indented more than the key above it"
SHALLOWER_HINT = "check the indentation: this line is indented less than the key above it"
# What the parsers (libyaml's, PyYAML's) say at a line's first character when a block ended there unexpectedly.
_BLOCK_ENDED_EARLY = ("did not find expected '-' indicator", "did not find expected key", "expected <block end>")
# A line holding a key (after any list dashes): the key's column is the length of ``lead``.
_KEY_LINE = re.compile(r"(?P<lead>\s*(?:-\s+)*)[^\s#-][^:#]*:(?:\s+(?P<value>.*))?$")


def _key_above(lines: list[str], number: int) -> tuple[int, str] | None:
    """The column of the key on the nearest line above ``number`` that is not blank or a comment, and its value;
    None when that line holds no key."""
    for above in reversed(lines[:number]):
        if above.strip() and not above.lstrip().startswith("#"):
            key = _KEY_LINE.match(above)
            return (len(key["lead"]), (key["value"] or "").strip()) if key else None
    return None


def _indentation_hint(text: str, exc: yaml.MarkedYAMLError) -> str | None:
    """The hint for a key indented differently from the key above it, the commonest slip in a hand-written file.
    One space too many reads as the plain value above going on, and the parser says what it says of ``key: a: b``
    (whose hint, to quote, would mislead); one too few ends the block early, which the parser reports at the line's
    first character. A tab in the indentation has its own hint."""
    mark, problem = exc.problem_mark, exc.problem or ""
    lines = text.splitlines()
    if mark is None or mark.line >= len(lines):
        return None
    line = lines[mark.line]
    indent = len(line) - len(line.lstrip(" "))
    above = _key_above(lines, mark.line)
    if above is None or line[indent : indent + 1] == "\t":
        return None
    column, value = above
    plain = bool(value) and value[0] not in "\"'[{|>"
    if problem.startswith(_MAPPING_VALUES) and indent > column and plain:
        return DEEPER_HINT
    if problem.startswith(_BLOCK_ENDED_EARLY) and mark.column == indent < column:
        return SHALLOWER_HINT
    return None


def _syntax_problem(path: Path, text: str, exc: yaml.MarkedYAMLError) -> Problem:
    """A syntax error where it was made: a quote or a bracket never closed is reported where it opens (the parser
    notices at the end of the file), with what the parser was reading there and a hint for the common mistakes."""
    mark = exc.problem_mark or exc.context_mark
    reading = exc.context or ""
    opened = exc.context_mark if "quoted" in reading or "flow" in reading else None  # where the quote or [ opened
    at = opened or mark
    line = at.line + 1 if at else 1
    kind = "YAML error" if isinstance(exc, yaml.constructor.ConstructorError) else "YAML syntax error"  # a tag's value
    message = kind + (f" (line {mark.line + 1}, column {mark.column + 1})" if mark else "")
    message += f": {exc.problem}"
    if opened is not None:
        message += f", {reading} that starts at line {opened.line + 1}, column {opened.column + 1}"
        if mark is not None and mark.line > opened.line:
            message += " (a quote or bracket never closed?)"
    indentation = _indentation_hint(text, exc)
    hints = (
        [indentation] if indentation else [hint for said, hint in _SYNTAX_HINTS.items() if said in (exc.problem or "")]
    )
    if mark is not None and text[mark.index : mark.index + 1] == "\t" and not hints:
        hints.append(TAB_HINT)
    return Problem(str(path), line, DOCUMENT, message + "".join(f"; {hint}" for hint in hints))


# A \uXXXX escape (after an even run of backslashes: an odd one's last escapes the backslash) of a UTF-16 surrogate,
# with the low half after it when the first is a high half: how JSON writes a character beyond U+FFFF.
_SURROGATE_ESCAPE = re.compile(
    r"(?<!\\)(?P<before>(?:\\\\)*)\\u(?P<high>d[89ab][0-9a-f]{2})\\u(?P<low>d[c-f][0-9a-f]{2})"
    r"|(?<!\\)(?:\\\\)*(?P<lone>\\ud[89a-f][0-9a-f]{2})",
    re.IGNORECASE,
)
_LONE_SURROGATE = (
    "JSON error (line {line}, column {column}): {escape} is half of a character beyond U+FFFF (a surrogate) "
    "without its other half: such a character is two escapes, a high half \\ud800-\\udbff then a low half "
    "\\udc00-\\udfff"
)


def _json_escapes_for_yaml(path: Path, text: str) -> str:
    """JSON text with each escaped surrogate pair as YAML's escape of its character (``\\ud83c\\udf89`` ->
    ``\\U0001f389``): JSON writes a character beyond U+FFFF so (Python's ``json.dumps``, as Harbor's producers), and
    YAML, which reads every other JSON escape, refuses either half. Lines stay as they were; half a pair alone is a
    problem at its line. Only for JSON: in YAML a backslash outside double quotes is no escape."""
    problems: list[Problem] = []

    def one_character(match: re.Match[str]) -> str:
        if match["lone"] is None:
            code = 0x10000 + ((int(match["high"], 16) - 0xD800) << 10) + int(match["low"], 16) - 0xDC00
            return f"{match['before']}\\U{code:08x}"
        at = match.start("lone")
        line, column = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
        why = _LONE_SURROGATE.format(line=line, column=column, escape=match["lone"])
        problems.append(Problem(str(path), line, DOCUMENT, why))
        return match[0]

    escaped = _SURROGATE_ESCAPE.sub(one_character, text)
    if problems:
        raise InvalidInput(problems)
    return escaped


def parse_document(path: Path, text: str) -> Document:
    """Parse YAML text (JSON too: YAML reads it); a document that is invalid, an alias bomb or too deep is one
    located problem."""
    if path.suffix.lower() == ".json":
        text = _json_escapes_for_yaml(path, text)
    try:
        node = yaml.compose(text, Loader=_Loader)
        if node is not None:
            _check_expansion(node, str(path))
        data = yaml.load(text, Loader=_Loader) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        raise InvalidInput([_syntax_problem(path, text, exc)]) from None
    except yaml.reader.ReaderError as exc:  # a character YAML refuses (a NUL, a control character)
        line, before = line_at(text.encode(), exc.position)  # libyaml's position counts bytes of the UTF-8 text
        column = len(before.decode(errors="replace")) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        why = f"YAML error: the character U+{code:04X} at column {column} is not allowed in YAML"
        raise InvalidInput([Problem(str(path), line, DOCUMENT, why)]) from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise InvalidInput([Problem(str(path), 1, DOCUMENT, f"YAML error: {exc}")]) from None
    doc = Document(path, data)
    if node is not None:
        problems: list[Problem] = []
        _record_lines(node, (), doc.lines, problems, str(path), set())
        if problems:
            raise InvalidInput(problems)
    return doc


def _check_expansion(root: yaml.Node, path: str) -> None:
    """Refuse a node graph that aliases expand by more than MAX_ALIAS_EXPANSION values, or deeper than MAX_DEPTH.

    Sizes are memoized per node, so an alias bomb is measured in time
    proportional to its text, not to its expansion. Each node reached again
    through an alias adds its whole expanded size; a large document without
    aliases is bounded by the file size limit instead.
    """
    measured: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded size, height)
    open_nodes: set[int] = set()
    added = 0  # values that aliases add to the document

    def measure(node: yaml.Node, depth: int) -> tuple[int, int]:
        nonlocal added
        if isinstance(node, yaml.ScalarNode):
            return 1, 1
        key = id(node)
        known = measured.get(key)
        if known is not None:
            added += known[0]
        else:
            if key in open_nodes:
                _refuse(node, path, "an alias refers to a node that contains it")
            if depth > MAX_DEPTH:
                _refuse(node, path, f"it nests deeper than {MAX_DEPTH} levels")
            open_nodes.add(key)
            size, height = 1, 0
            for child in _children(node):
                child_size, child_height = measure(child, depth + 1)
                size, height = size + child_size, max(height, child_height)
                if added > MAX_ALIAS_EXPANSION:
                    _refuse(node, path, f"its aliases expand it by more than {MAX_ALIAS_EXPANSION} values")
            open_nodes.discard(key)
            known = measured[key] = (size, height + 1)
        if depth + known[1] > MAX_DEPTH + 1:
            _refuse(node, path, f"it nests deeper than {MAX_DEPTH} levels")
        return known

    measure(root, 1)


def _refuse(node: yaml.Node, path: str, why: str) -> NoReturn:
    raise InvalidInput([Problem(path, node.start_mark.line + 1, DOCUMENT, f"document refused: {why}")])


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value)


def _key_not_text(key_node: yaml.Node) -> str | None:
    """Why a key would not be text once loaded (``null:``, ``true:``, ``12:``, a date): every key of the format is a
    name, so such a key could only be refused later with a line and form of its own, or never match its JSON."""
    kind = key_node.tag.removeprefix("tag:yaml.org,2002:")
    if not isinstance(key_node, yaml.ScalarNode) or kind == "str":
        return None
    read_as = _KEY_KINDS.get(kind, f"!!{kind}")
    return f'a key must be text, and {key_node.value!r} is read as {read_as}: write it in quotes ("{key_node.value}")'


def _merged_keys_not_text(merged: yaml.Node, loc: Loc, path: str) -> list[Problem]:
    """The keys a merge (``<<: {12: a}``, ``<<: [*a, *b]``) brings in that are not text, at their own lines."""
    mappings = merged.value if isinstance(merged, yaml.SequenceNode) else [merged]
    return [
        Problem(path, key_node.start_mark.line + 1, dotted((*loc, key_node.value)), not_text)
        for mapping in mappings
        if isinstance(mapping, yaml.MappingNode)
        for key_node, _ in mapping.value
        if (not_text := _key_not_text(key_node))
    ]


# A loaded key's YAML kind, as _KEY_KINDS names them (a -D value has no nodes left to ask).
_YAML_KIND_OF: dict[type, str] = {
    type(None): "null",
    bool: "bool",
    int: "int",
    float: "float",
    datetime.date: "timestamp",
    datetime.datetime: "timestamp",
}
_KEY_KINDS = {"null": "null", "bool": "a boolean", "int": "a number", "float": "a number", "timestamp": "a date"}


def _record_lines(
    node: yaml.Node, loc: Loc, lines: dict[Loc, int], problems: list[Problem], path: str, visited: set[int]
) -> None:
    """Lines of every key and item; a node reached again through an alias is not walked twice."""
    if id(node) in visited:
        return
    visited.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key == "<<":  # merge keys: their contents were merged by the loader (their keys are this mapping's)
                problems += _merged_keys_not_text(value_node, loc, path)
                continue
            child = (*loc, key)
            if not_text := _key_not_text(key_node):
                problems.append(Problem(path, key_node.start_mark.line + 1, dotted(child), not_text))
            if key in seen:
                problems.append(Problem(path, key_node.start_mark.line + 1, ".".join(map(str, child)), "duplicate key"))
            seen.add(key)
            lines[child] = key_node.start_mark.line + 1
            _record_lines(value_node, child, lines, problems, path, visited)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*loc, index)
            lines[child] = item.start_mark.line + 1
            _record_lines(item, child, lines, problems, path, visited)
