"""Row values in shell commands: each ``${row.x}`` quoted for where the shell reads it.

A small scanner of the command (quotes, ``$(...)`` and backticks, here-documents, comments, arithmetic and
parameter expansions) finds the context of each placeholder; :func:`quoted` writes a value so that it stays
data there, and :class:`Unsafe` says where no quoting can (the task is refused at load). Used by
``datasets.substitute`` for the strings under a ``command`` key.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

PLACEHOLDER = re.compile(r"\$\{row\.([^}]+)\}")


class Unsafe(Exception):
    """No quoting makes a row value data where it stands (the message says why)."""

    def __init__(self, why: str, name: str = "") -> None:
        super().__init__(why)
        self.name = name


_INERT = re.compile(r"[\w@%+=:,./-]*", re.ASCII)  # shlex's safe characters: the same text in any shell context
_BACKSLASHED = {"dq": '\\"$`', "heredoc": "\\$`", "bq": "\\$`", "bq-dq": '\\"$`'}  # what a backslash escapes there
_WORD_BREAK = " \t\n;&|()<>"
_JOINS_SAFELY = " \t\n;&|)\"'"  # unquoted: what may precede a line continuation without making a new construct
_WORD = re.compile(r"[^\s;&|()<>]+")
_ARITH_TEST = re.compile(r"(?<!\S)-(?:eq|ne|lt|le|gt|ge)(?!\S)")
_SIMPLE_PARAMETER = re.compile(r"#?(?:[A-Za-z_]\w*|\d+|[@*#?$!-])\}")


@dataclass
class Slot:
    """A placeholder of a command: its span, and where it stands, innermost first (``bare``, ``dq``, ``sq``,
    ``heredoc``, ``literal``, ``comment`` or ``plain``, then ``bq``/``bq-dq`` per enclosing backtick)."""

    start: int
    end: int
    name: str
    layers: tuple[str, ...]
    why: str = ""  # for ``plain``: the construct that reads the value's text as code


@dataclass
class _Heredoc:
    delimiter: str
    quoted: bool  # <<'EOF': the body is literal
    strip_tabs: bool  # <<-EOF
    body: tuple[int, int] = (0, 0)
    closed: bool = False  # its delimiter line was found

    def is_delimiter(self, line: str) -> bool:
        return (line.lstrip("\t") if self.strip_tabs else line) == self.delimiter

    def misread(self, body: str) -> bool:
        """Whether ``body`` would not end exactly at the delimiter line, as sh reads it (line by line) or as bash
        does (in an expanding here-document, first joining each line that ends in a backslash to the next)."""
        text = body + self.delimiter if self.closed else body
        readings = [text.split("\n")] + ([] if self.quoted else [_joined_lines(text)])
        for lines in readings:
            ends = [index for index, line in enumerate(lines) if self.is_delimiter(line)]
            if ends != ([len(lines) - 1] if self.closed else []):
                return True
        return False


class Shell:
    """One level of POSIX shell text (a command, or the inside of a backtick substitution), scanned for where each
    ``${row.x}`` stands, so that its value is quoted for the shell's real reading there.

    Constructs whose reading differs between shells or that read a quoted word's text as code (arithmetic,
    ``${...}`` operators, ``$'...'``, ``[[ -eq ]]``, an array index, ``case`` in a substitution) take only an
    inert value (letters, digits, ``@%+=:,./-_``): the same text however it is read.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.slots: list[Slot] = []
        self.heredocs: list[_Heredoc] = []
        self.children: list[Shell] = []
        self._pending: list[_Heredoc] = []
        self._plain: list[str] = []  # the constructs being read whose values must be inert
        self._lost = ""  # a construct not followed: every later value must be inert
        self._test_depth = 0  # len(_plain) inside an arithmetic [[ ]], 0 outside

    def _why(self) -> str:
        """Why a value here must be inert ("" when it need not)."""
        return self._lost or (self._plain[-1] if self._plain else "")

    def scan(self) -> Shell:
        self._command(0, nested=False)
        self.slots.sort(key=lambda slot: slot.start)
        return self

    def render(self, start: int, end: int, replace: Callable[[Slot], str | None]) -> str:
        """``text[start:end]`` with each slot's replacement (a slot ``replace`` leaves as None stays as written)."""
        parts, at = [], start
        for slot in self.slots:
            if start <= slot.start and slot.end <= end and (value := replace(slot)) is not None:
                parts += [self.text[at : slot.start], value]
                at = slot.end
        return "".join([*parts, self.text[at:end]])

    def check(self, replace: Callable[[Slot], str | None]) -> None:
        """Refuse values that would end a here-document early (its following lines would run as commands) or
        join its delimiter line to the body."""
        for heredoc in self.heredocs:
            start, end = heredoc.body
            if heredoc.misread(self.render(start, end, replace)):
                names = sorted({slot.name for slot in self.slots if start <= slot.start < end})
                why = f"a line of it would end the here-document ({heredoc.delimiter!r}) elsewhere than written"
                raise Unsafe(why, ", ".join(names))
        for child in self.children:
            child.check(replace)

    def _add(self, index: int, context: str, why: str = "") -> int | None:
        """The end of the placeholder at ``index`` (recorded as a slot), None when there is none."""
        match = PLACEHOLDER.match(self.text, index)
        if match is None:
            return None
        why = self._why() or why
        self.slots.append(Slot(index, match.end(), match.group(1), ("plain" if why else context,), why))
        return match.end()

    def _command(self, index: int, nested: bool) -> int:
        """Unquoted text, up to the ``)`` that ends it when ``nested``; the index after it."""
        text, word_start = self.text, True  # whether text[index] starts a word (a comment, a keyword)
        while index < len(text):
            char, at_start, word_start = text[index], word_start, False
            index_of = "an array index (read as arithmetic)" if text[index - 1 : index] == "[" else ""
            if (end := self._add(index, "bare", index_of)) is not None:
                index = end
            elif char == "\\":
                word_start = at_start and text.startswith("\\\n", index)  # a continuation joins, it does not end
                index = self._escape(index, quoted=False)
            elif char in "'\"`$(":
                index, word_start = self._opening(index, at_start), char == "("
            elif char == ")":
                if nested:
                    return index + 1
                index, word_start = index + 1, True
            elif text.startswith("<<", index):
                index = self._heredoc_operator(index)
            elif char == "\n":
                index, word_start = self._newline(index + 1), True
            else:
                index = self._word(index, nested) if at_start else index + 1
                word_start = char in _WORD_BREAK
        return index

    def _escape(self, index: int, quoted: bool) -> int:
        """Past a backslash and the character it escapes. A line continuation (backslash, newline) joins the text
        around it: after ``$`` (or, unquoted, after anything but a blank or ``;&|)"'``) the two sides may make a
        construct (``$(``, ``<<``, ``((``, a word) that this scanner would not see, so every later value must be
        inert."""
        text = self.text
        if text.startswith("\\\n", index) and index:
            before = text[index - 1]
            if before == "$" or (not quoted and before not in _JOINS_SAFELY):
                self._lost = self._lost or "text joined by a line continuation (a \\ ending a line after a non-blank)"
        return index + 2

    def _opening(self, index: int, word_start: bool) -> int:
        """Past a quote or substitution that opens at ``index`` in unquoted text."""
        char = self.text[index]
        if char == "'":
            return self._single(index + 1)
        if char == '"':
            return self._expanding(index + 1, len(self.text), "dq")
        if char == "`":
            return self._backtick(index, "bq")
        if char == "$":
            return self._dollar(index, unquoted=True)
        if word_start and self.text.startswith("((", index):
            return self._arithmetic(index + 2)
        return self._command(index + 1, nested=True)

    def _word(self, index: int, nested: bool) -> int:
        """A comment, or a word that changes how what follows is read (``[[``, ``]]``, ``case``)."""
        text = self.text
        if text[index] == "#":
            end = _line_end(text, index)
            for match in PLACEHOLDER.finditer(text, index, end):
                self._add(match.start(), "comment")
            return end
        word = _WORD.match(text, index)
        name = word.group() if word else ""
        # to the text's end, not its first "]]": one in quotes ("]]") would hide a later -eq (a false refusal of an
        # -eq after the test is the price)
        if name == "[[" and _ARITH_TEST.search(text, index):
            self._plain.append("[[ ]] with an arithmetic test (its operands are read as arithmetic)")
            self._test_depth = len(self._plain)
        elif name == "]]" and self._test_depth and self._test_depth == len(self._plain):
            self._plain.pop()
            self._test_depth = 0
        elif name == "case" and nested:
            self._lost = self._lost or "a case statement inside a substitution (its patterns end with ')')"
        return index + 1

    def _single(self, index: int) -> int:
        end = self.text.find("'", index)
        end = len(self.text) if end < 0 else end
        for match in PLACEHOLDER.finditer(self.text, index, end):
            self._add(match.start(), "sq")
        return end + 1

    def _expanding(self, index: int, end: int, context: str) -> int:
        """The body of ``"..."`` (context ``dq``) or of an unquoted here-document up to ``end`` (``heredoc``)."""
        text = self.text
        while index < end:
            char = text[index]
            if (after := self._add(index, context)) is not None:
                index = after
            elif char == "\\":
                index = self._escape(index, quoted=True)
            elif char == '"' and context == "dq":
                return index + 1
            elif char == "`":
                index = self._backtick(index, "bq-dq" if context == "dq" else "bq")
            elif char == "$":
                index = self._dollar(index, unquoted=False)
            else:
                index += 1
        return index

    def _dollar(self, index: int, unquoted: bool) -> int:
        """Past ``$(...)``, ``$((...))``, ``${...}``, ``$'...'`` (bash), ``$$`` or a lone ``$``."""
        text = self.text
        after = text[index + 1 : index + 2]
        if text.startswith("$((", index):
            return self._arithmetic(index + 3)
        if after == "(":
            return self._command(index + 2, nested=True)
        if after == "{":
            return self._parameter(index + 2)
        if after == "[":
            self._lost = self._lost or "$[...] arithmetic"
        elif after == "'" and unquoted:
            return self._ansi_c(index + 2)
        return index + 2 if after == "$" else index + 1  # $$: the shell's id, not a $ that opens a construct

    def _arithmetic(self, index: int) -> int:
        """``$((...))`` or ``((...))``: its text is expanded then evaluated (``a[$(cmd)]`` runs cmd)."""
        self._plain.append("arithmetic")
        index = self._command(index, nested=True)
        self._plain.pop()
        return index + 1 if self.text.startswith(")", index) else index

    def _parameter(self, index: int) -> int:
        """``${...}``: a name alone is skipped; with an operator its word is read differently by each shell."""
        text = self.text
        simple = _SIMPLE_PARAMETER.match(text, index)
        if simple:
            return simple.end()
        self._plain.append("a ${...} expansion")
        while index < len(text) and text[index] != "}":
            char = text[index]
            if (after := self._add(index, "plain")) is not None:
                index = after
            elif char == "\\":
                index += 2
            elif char in "'\"":
                self._lost = self._lost or "quotes inside ${...}"
                index = self._single(index + 1) if char == "'" else self._expanding(index + 1, len(text), "dq")
            elif char in "`$":
                index = self._backtick(index, "bq") if char == "`" else self._dollar(index, unquoted=False)
            else:
                index += 1
        self._plain.pop()
        return index + 1

    def _ansi_c(self, index: int) -> int:
        """bash's ``$'...'`` (backslash escapes); dash reads ``$`` then ``'...'``: the two may end apart."""
        text, end = self.text, index
        while end < len(text) and text[end] != "'":
            end += 2 if text[end] == "\\" else 1
        if text.find("'", index) != end:
            self._lost = self._lost or "$'...' with a backslash-escaped quote"
        self._plain.append("$'...' (read differently by bash and sh)")
        for match in PLACEHOLDER.finditer(text, index, min(end, len(text))):
            self._add(match.start(), "plain")
        self._plain.pop()
        return end + 1

    def _backtick(self, index: int, layer: str) -> int:
        """A backtick substitution: its text unescaped (as the shell does) is scanned as a command of its own."""
        text, end = self.text, index + 1
        while end < len(text) and text[end] != "`":
            end += 2 if text[end] == "\\" else 1
        end = min(end, len(text))
        escaped = _BACKSLASHED[layer]
        inner, origin, removed, at = [], [], set(), index + 1
        while at < end:
            if text[at] == "\\" and at + 1 < end and text[at + 1] in escaped:
                removed.add(at)
                at += 1
            inner.append(text[at])
            origin.append(at)
            at += 1
        child = Shell("".join(inner)).scan()
        self.children.append(child)
        for slot in child.slots:
            start, stop = origin[slot.start], origin[slot.end - 1] + 1
            if stop - start == slot.end - slot.start and start - 1 not in removed:  # written as is in the outer text
                why = self._why() or slot.why
                layers = ("plain", *slot.layers[1:]) if why else slot.layers
                self.slots.append(Slot(start, stop, slot.name, (*layers, layer), why))
        return end + 1

    def _heredoc_operator(self, index: int) -> int:
        """``<<WORD`` / ``<<-WORD``: a here-document whose body starts at the next line (``<<<`` is not one)."""
        text = self.text
        if text.startswith("<<<", index):
            return index + 3
        if self._plain:
            self._lost = self._lost or "<< inside arithmetic or ${...}"
            return index + 2
        strip_tabs = text.startswith("<<-", index)
        index += 3 if strip_tabs else 2
        while index < len(text) and text[index] in " \t":
            index += 1
        word, quoted = [], False
        while index < len(text) and text[index] not in _WORD_BREAK:
            char = text[index]
            if PLACEHOLDER.match(text, index):
                self._lost = self._lost or "a placeholder in a here-document's delimiter"
                index = self._add(index, "plain") or index
            elif char in "'\"":
                close = text.find(char, index + 1)
                close = len(text) if close < 0 else close
                word.append(text[index + 1 : close])
                quoted, index = True, close + 1
            else:
                quoted = quoted or char == "\\"
                word.append(text[index + 1 : index + 2] if char == "\\" else char)
                index += 2 if char == "\\" else 1
        self._pending.append(_Heredoc("".join(word), quoted, strip_tabs))
        return index

    def _newline(self, index: int) -> int:
        """Past the bodies of the here-documents opened on the line that just ended."""
        pending, self._pending = self._pending, []
        for heredoc in pending:
            index = self._heredoc_body(index, heredoc)
        return index

    def _heredoc_body(self, index: int, heredoc: _Heredoc) -> int:
        """Past the body and delimiter line of ``heredoc``, its placeholders recorded."""
        text, start, joined = self.text, index, False
        while index < len(text):
            end = _line_end(text, index)
            line = text[index:end]
            if heredoc.is_delimiter(line):
                if not joined:
                    heredoc.closed = True
                    break
                self._lost = self._lost or "a here-document whose delimiter follows a line ending in \\"
            joined = not heredoc.quoted and _continues(line)
            index = end + 1
        body_end = min(index, len(text))
        heredoc.body = (start, body_end)
        self.heredocs.append(heredoc)
        if heredoc.quoted:
            for match in PLACEHOLDER.finditer(text, start, body_end):
                self._add(match.start(), "literal")
        elif self._expanding(start, body_end, "heredoc") > body_end:
            self._lost = self._lost or "a substitution that runs past its here-document's end"
        return _line_end(text, body_end) + 1 if heredoc.closed else body_end


def quoted(value: str, slot: Slot) -> str:
    """``value`` as data where ``slot`` stands: quoted for its context, then escaped for each enclosing backtick."""
    if "\0" in value:
        raise Unsafe("it holds a NUL character, which no shell command can carry")
    context, *backticks = slot.layers
    if context == "bare":
        text = shlex.quote(value)
    elif context == "sq":
        text = value.replace("'", "'\\''")
    elif context in _BACKSLASHED:
        text = _backslashed(value, _BACKSLASHED[context])
    elif context == "comment" and "\n" in value:
        raise Unsafe("it has a line break, which ends the comment it stands in")
    elif context == "plain" and not _INERT.fullmatch(value):
        raise Unsafe(f"it stands in {slot.why}, where only letters, digits and @%+=:,./-_ stay data")
    else:
        text = value  # literal (a quoted here-document), comment, or an inert value
    for layer in backticks:
        text = _backslashed(text, _BACKSLASHED[layer])
    return text


def _continues(line: str) -> bool:
    """Whether ``line`` ends in an unescaped backslash (a line continuation)."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _joined_lines(text: str) -> list[str]:
    """``text``'s lines with each continuation joined to the next line."""
    lines, pending = [], ""
    for line in text.split("\n"):
        if _continues(line):
            pending += line[:-1]
        else:
            lines.append(pending + line)
            pending = ""
    return [*lines, pending] if pending else lines


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end < 0 else end


def _backslashed(text: str, special: str) -> str:
    return "".join("\\" + char if char in special else char for char in text)
