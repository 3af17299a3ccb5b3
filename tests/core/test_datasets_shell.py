"""Row values in shell commands stay data in every context the shell reads them in (defect sweep, item 1).

Each command is substituted as a task load does, then run by both shells a
sandbox may have as ``/bin/sh`` (dash and bash): the value must come out as
written and nothing in it may run. Where no quoting can keep a value data,
the load refuses it, naming the row and the field.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from coder_eval_dagster.core.datasets import Row, substitute
from coder_eval_dagster.core.problems import InvalidInput

SHELLS = [shell for shell in ("dash", "bash") if shutil.which(shell)]
MARKER = "PWNED"
HOSTILE = [
    f"x; touch {MARKER}",
    f"$(touch {MARKER})",
    f"`touch {MARKER}`",
    f"')\"; touch {MARKER}; echo '",
    'it\'s "quoted" \\ $HOME',
    f"two\nlines; touch {MARKER}",
    f"x\ntouch {MARKER} #",
    "\\",
]
# (command, what it prints for value v): contexts the shell reads a placeholder in
CONTEXTS: dict[str, tuple[str, Callable[[str], str]]] = {
    "bare": ("printf %s ${row.v}", lambda v: v),
    "double quotes": ('printf %s "${row.v}"', lambda v: v),
    "single quotes": ("printf %s '${row.v}'", lambda v: v),
    "$() in double quotes": ('printf %s "$(printf %s ${row.v})"', lambda v: v.rstrip("\n")),
    "quoted in $() in double quotes": ('printf %s "$(printf %s "${row.v}")"', lambda v: v.rstrip("\n")),
    "backticks in double quotes": ('printf %s "`printf %s ${row.v}`"', lambda v: v.rstrip("\n")),
    "quoted in backticks in double quotes": ('printf %s "`printf %s "${row.v}"`"', lambda v: v.rstrip("\n")),
    "nested $()": ('printf %s "$(printf %s "$(printf %s ${row.v})")"', lambda v: v.rstrip("\n")),
    "here-document": ("cat <<EOF\n${row.v}\nEOF\n", lambda v: v + "\n"),
    "quoted here-document": ("cat <<'EOF'\n${row.v}\nEOF\n", lambda v: v + "\n"),
    "tab-stripped here-document": ("cat <<-EOF\n\t${row.v}\n\tEOF\n", lambda v: v + "\n"),
    "$() in a here-document": ("cat <<EOF\n$(printf %s ${row.v})\nEOF\n", lambda v: v.rstrip("\n") + "\n"),
    "backticks in a here-document": ("cat <<EOF\n`printf %s ${row.v}`\nEOF\n", lambda v: v.rstrip("\n") + "\n"),
    "here-document in $()": ('x=$(cat <<EOF\n${row.v}\nEOF\n); printf %s "$x"', lambda v: v.rstrip("\n")),
    "continued lines": ("printf '%s|' \\\n  \"${row.v}\" \\\n  ${row.v}", lambda v: f"{v}|{v}|"),
}
# commands whose escapes and line continuations change where a placeholder stands
TRICKY = [
    "printf %s \\ #${row.v}",  # an escaped blank: '#' goes on a word, it starts no comment
    "# a note\\\n#${row.v}\necho ok",  # a comment's last backslash continues nothing
    "\\\n#${row.v}\necho ok",  # a continuation before '#': still a comment
    "printf %s `\\${row.v}; echo`",  # an escaped placeholder in backticks is left as written
    'echo "$\\\n(printf %s ${row.v})"',  # a continuation joining '$' and '(': a substitution
    "cat <<EOF\n$$(printf %s ${row.v})\nEOF\n",  # '$$' is the shell's id: '(' after it opens nothing
]


def filled(command: str, value: str) -> str:
    """``command`` with ``value`` for ``${row.v}``, as a task load fills it in (row r1, rows.jsonl line 3)."""
    result: str = substitute(command, Row("r1", {"v": value}, "rows.jsonl:3"), set(), command=True)
    return result


def run(shell: str, command: str, folder: Path) -> str:
    folder.mkdir()
    done = subprocess.run([shell, "-c", command], cwd=folder, capture_output=True, text=True, timeout=30)
    assert not (folder / MARKER).exists(), f"{shell} ran a row value: {command!r}"
    return done.stdout


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("context", CONTEXTS)
def test_a_row_value_is_data_in_every_shell_context(tmp_path: Path, shell: str, context: str) -> None:
    command, prints = CONTEXTS[context]
    for index, value in enumerate(HOSTILE):
        out = run(shell, filled(command, value), tmp_path / str(index))
        assert out == prints(value), (context, value, filled(command, value))


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("command", TRICKY)
def test_escapes_and_line_continuations_do_not_mislead_the_quoting(tmp_path: Path, shell: str, command: str) -> None:
    for index, value in enumerate(HOSTILE):
        try:
            run(shell, filled(command, value), tmp_path / str(index))
        except InvalidInput:
            continue  # refused at load: never run


def test_the_reviewers_command_substitution_keeps_its_value_one_word(tmp_path: Path) -> None:
    command = filled("echo \"$(printf '%s' ${row.v})\" > out.txt", "x; touch PWNED_CS")
    assert command == "echo \"$(printf '%s' 'x; touch PWNED_CS')\" > out.txt"


def test_a_here_document_gets_the_value_not_its_quotes() -> None:
    assert filled("cat > out.txt <<EOF\n${row.v}\nEOF\n", "hello world") == "cat > out.txt <<EOF\nhello world\nEOF\n"
    assert filled("cat <<EOF\n${row.v}\nEOF\n", "a $b `c` \\d") == "cat <<EOF\na \\$b \\`c\\` \\\\d\nEOF\n"
    assert filled("cat <<'EOF'\n${row.v}\nEOF\n", "a $b 'c'") == "cat <<'EOF'\na $b 'c'\nEOF\n"


def refusal(command: str, value: str) -> str:
    with pytest.raises(InvalidInput) as caught:
        filled(command, value)
    (problem,) = caught.value.problems
    assert (problem.path, problem.line, problem.field) == ("rows.jsonl", 3, "v"), problem
    return problem.message


@pytest.mark.parametrize(
    ("command", "value", "why"),
    [
        ("cat <<EOF\n${row.v}\nEOF\n", "x\nEOF\ntouch PWNED", "would end the here-document ('EOF')"),
        ("cat <<'EOF'\n${row.v}\nEOF\n", "EOF", "would end the here-document ('EOF')"),
        ("cat <<EOF\n$(printf %s '${row.v}')\nEOF\n", "x\nE\\\nOF\ntouch PWNED #", "would end the here-document"),
        ("echo ok # ${row.v}", "x\ntouch PWNED", "ends the comment"),
        ('echo "$(( ${row.v} + 1 ))"', "a[$(touch PWNED)]", "arithmetic"),
        ("[[ 1 -eq ${row.v} ]]", "a[$(touch PWNED)]", "arithmetic test"),
        ('echo "${X:-${row.v}}"', "a b", "a ${...} expansion"),
        ("echo $'${row.v}'", "\\'; touch PWNED; '", "$'...'"),
    ],
)
def test_a_value_no_quoting_keeps_data_is_refused_with_its_row(command: str, value: str, why: str) -> None:
    message = refusal(command, value)
    assert message.startswith("row 'r1': ") and "${row.v}" in message and why in message, message
    assert "42" in filled(command, "42")  # a plain value is data there: it goes in as is


def test_a_command_nested_too_deep_to_follow_is_refused() -> None:
    assert "nests too deep" in refusal("(" * 3000 + "${row.v}", "x")
