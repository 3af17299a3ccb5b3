"""`command_executed`: the agent ran (or did not run) a matching tool call."""

from __future__ import annotations

import functools
import json
import re
import shlex
from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from .. import patterns
from ..models.base import check_regex, rule_error
from ..models.criterion import LiveObservable
from .outcome import Outcome
from .registry import checks

if TYPE_CHECKING:
    from ..check_context import CheckContext
    from ..models.results import ToolCallRecord


class CommandExecuted(LiveObservable):
    type: Literal["command_executed"]
    tool_name: str | None = None
    command_pattern: str | None = None
    min_count: int = Field(default=1, ge=0)
    max_count: int | None = Field(default=None, ge=0)
    require_success: bool = False
    exclude_pattern: str | None = None

    @model_validator(mode="after")
    def _patterns_and_bounds(self) -> CommandExecuted:
        for name in ("command_pattern", "exclude_pattern"):
            try:
                check_regex(getattr(self, name))
            except ValueError as exc:
                raise rule_error(name, str(exc)) from None
        if self.max_count is not None and self.max_count < self.min_count:
            raise rule_error("max_count", f"must be >= min_count ({self.min_count})")
        return self

    def can_live_pass(self) -> bool:
        """Only a count with no upper bound can be settled as a pass while the agent runs."""
        return self.max_count is None and self.min_count > 0

    def can_live_fail(self) -> bool:
        return self.max_count is not None

    def live_hit(self, call: ToolCallRecord) -> bool:
        return counts(self, call)

    def live_verdict(self, hits: int) -> Literal["pass", "fail"] | None:
        if self.max_count is not None and hits > self.max_count:  # (can_live_fail)
            return "fail"
        if self.can_live_pass() and hits >= self.min_count:
            return "pass"
        return None


def command_text(call: ToolCallRecord) -> str:
    """The text a pattern is matched against: a Bash call's command, else its parameters as JSON (coder_eval's)."""
    return str(call.parameters["command"]) if is_shell_call(call) else json.dumps(call.parameters, default=str)


def is_shell_call(call: ToolCallRecord) -> bool:
    """A Bash call with a command to read; anything else is matched as its JSON parameters, never shell-parsed."""
    command = call.parameters.get("command")
    return call.tool == "Bash" and isinstance(command, str) and bool(command)


def _joined_continuations(script: str) -> str:
    """``script`` with each line continuation (a backslash-newline outside single quotes) removed, as bash does."""
    out: list[str] = []
    quote = ""  # the open quote character, if any
    i = 0
    while i < len(script):
        char = script[i]
        if char == "\\" and quote != "'" and i + 1 < len(script):
            if script[i + 1] != "\n":
                out.append(script[i : i + 2])
            i += 2
            continue
        if char in "'\"" and quote in ("", char):
            quote = "" if quote else char
        out.append(char)
        i += 1
    return "".join(out)


def _words(script: str) -> list[str] | None:
    """The shell words of ``script`` (quoting resolved), or None when its quotes do not close."""
    try:
        return shlex.split(script)
    except ValueError:
        return None


def _is_shell_program(word: str) -> bool:
    """Any shell by its basename (``bash``, ``sh``, ``zsh``, ``dash``...), as coder_eval tells one."""
    return word.rsplit("/", 1)[-1].endswith("sh")


def _is_command_flag(word: str) -> bool:
    """A short-option cluster that carries ``c`` (``-c``, ``-lc``, ``-ic``, ``-lic``): the script follows it."""
    return len(word) >= 2 and word[0] == "-" and word[1] != "-" and word[1:].isalpha() and "c" in word[1:]


# Between the commands of a list or pipeline, a subshell or a substitution (outside quotes): the longest first.
SEPARATORS = ("&&", "||", "|&", ";", "&", "|", "\n", "(", ")", "`")
# Programs that run the command after them, with their own options and values between (``timeout -s KILL 5``,
# ``sudo -u root``, ``env -u HOME FOO=1``), and the shell's words that open a command (``then``, ``{``, ``!``).
RUNNERS = frozenset(
    {"sudo", "doas", "env", "exec", "nohup", "time", "command", "nice", "timeout", "stdbuf", "xargs", "setsid"}
)
OPENERS = frozenset({"then", "do", "else", "elif", "if", "while", "until", "{", "}", "!", "$"})
RUNNER_ARGUMENTS = 4  # words a runner's options and their values may take before the command it runs
MAX_WRAPPERS = 8  # nested ``bash -c "sh -c '...'"`` unwrapped at most this deep


def _commands(script: str) -> list[tuple[str, str]]:
    """``script`` cut at each separator outside quotes, as (command text, the separator after it); a ``&`` of a
    redirection (``2>&1``, ``&>``) is no separator, and a comment (``#`` starting a word) is left out to its line's
    end (its apostrophe opened no quote)."""
    parts: list[tuple[str, str]] = []
    quote, begun, i = "", 0, 0
    while i < len(script):
        char = script[i]
        if char == "\\" and quote != "'":
            i += 2
            continue
        if char == "#" and not quote and (i == 0 or script[i - 1] in " \t\n;&|("):
            end = script.find("\n", i)
            parts.append((script[begun:i], "\n" if end >= 0 else ""))
            i = begun = len(script) if end < 0 else end + 1
            continue
        if char in "'\"" and quote in ("", char):
            quote = "" if quote else char
        elif not quote and (separator := _separator_at(script, i)):
            parts.append((script[begun:i], separator))
            i = begun = i + len(separator)
            continue
        i += 1
    return [*parts, (script[begun:], "")]


def _separator_at(script: str, i: int) -> str:
    found = next((s for s in SEPARATORS if script.startswith(s, i)), "")
    redirection = found == "&" and (script[i - 1 : i] in ("<", ">") or script[i + 1 : i + 2] == ">")
    return "" if redirection else found


def _unwrapped(script: str, depth: int = 0) -> list[str]:
    """The words of ``script`` with each command's ``bash -lc``/``bash -l -c``/``sh -ic`` wrapper replaced by the
    words of the script it runs: in every command of a list, a pipeline, a subshell or a substitution
    (``cd x; bash -lc "..."``, ``bash -c "..." | cat``), behind a runner or an assignment (``sudo -u root``,
    ``timeout -s KILL 5``, ``FOO=1``). A command whose quotes do not close as read here (a comment's apostrophe,
    ``$'...'``, a here-document's line) stays as written, the others are still unwrapped: one such line turned the
    whole normalization off, and a wrapped command beside it past a guard."""
    out: list[str] = []
    for text, separator in _commands(_joined_continuations(script)):  # (a nested script's too)
        words = _words(text)
        unwrapped = [text.strip()] if words is None else _command_unwrapped(words, depth)
        out += [*filter(None, unwrapped), *([separator] if separator.strip() else [])]
    return out


def _command_unwrapped(words: list[str], depth: int) -> list[str]:
    runner = None  # where the last runner stood: its options and values may follow it
    for index, word in enumerate(words):
        if _is_shell_program(word) and depth < MAX_WRAPPERS:
            return _script_run(words, index, depth)
        if word in RUNNERS or word in OPENERS:
            runner = index
        elif not _runs_what_follows(word) and (runner is None or index - runner > RUNNER_ARGUMENTS):
            break
    return words


def _script_run(words: list[str], shell: int, depth: int) -> list[str]:
    """The words before the shell, then those of the script its ``-c`` runs (and the arguments after it)."""
    for index in range(shell + 1, len(words) - 1):
        if _is_command_flag(words[index]):
            return [*words[:shell], *_unwrapped(words[index + 1], depth + 1), *words[index + 2 :]]
        if not words[index].startswith("-"):
            break  # a script file, not a -c wrapper
    return words


def _runs_what_follows(word: str) -> bool:
    """A word a wrapper may stand behind: a flag, an assignment (``FOO=1``) or a duration."""
    return (
        word.startswith("-")
        or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*|\d+(\.\d+)?[smhd]?", word, re.DOTALL) is not None
    )


@functools.lru_cache(maxsize=4096)  # (each call's command is asked again by every criterion, live and at the end)
def shell_normalized(command: str) -> str | None:
    """The command as the shell reads it: wrappers stripped, continuations joined, quoting resolved (a command whose
    quotes do not close as written); None for an empty command.

    The guide's "shell-normalized form" (coder_eval's ``_normalize_shell``), with one difference a user can see:
    coder_eval keeps a line continuation as a newline word, bash drops it, and so does this (``^git push`` matches
    ``git \\<newline> push``).
    """
    unwrapped = _unwrapped(command)
    return " ".join(unwrapped) if unwrapped else None


def haystacks(call: ToolCallRecord) -> list[str]:
    """The raw text and, for a Bash call, its shell-normalized form: a hit on either counts."""
    raw = command_text(call)
    normalized = shell_normalized(raw) if is_shell_call(call) else None
    return [raw] if normalized is None or normalized == raw else [raw, normalized]


def _found(pattern: str, text: str) -> bool:
    """DOTALL, as coder_eval compiles both patterns: agents write multi-line bash, and ``foo.*--body`` must span it."""
    return patterns.search(pattern, text, re.DOTALL)


def counts(criterion: CommandExecuted, call: ToolCallRecord) -> bool:
    if criterion.tool_name is not None and call.tool != criterion.tool_name:
        return False
    if criterion.require_success and call.status != "success":
        return False
    texts = haystacks(call)
    if criterion.command_pattern is not None and not any(_found(criterion.command_pattern, t) for t in texts):
        return False
    excluded = criterion.exclude_pattern
    return not (excluded is not None and any(_found(excluded, t) for t in texts))


def score_for(criterion: CommandExecuted, matched: int) -> float:
    """matched / min_count (capped at 1); 0 once max_count is exceeded."""
    if criterion.max_count is not None and matched > criterion.max_count:
        return 0.0
    return min(1.0, matched / criterion.min_count) if criterion.min_count else 1.0


@checks(CommandExecuted)
def check(criterion: CommandExecuted, ctx: CheckContext) -> Outcome:
    matched = [command_text(c) for c in ctx.calls if counts(criterion, c)]
    details = {"matches": len(matched), "matched_commands": matched[:20], "total_calls": len(ctx.calls)}
    return Outcome(score_for(criterion, len(matched)), details)
