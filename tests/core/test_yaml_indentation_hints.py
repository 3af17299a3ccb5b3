"""A YAML syntax error from a key indented one space off says to check the indentation, not to quote a value.

One space too many under a list item (``    path: a.txt`` then ``     description: a exists``) got the hint for
``key: a: b`` (quote the value), which the user did not write; one space too few got no hint at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_eval_dagster.core.problems import InvalidInput
from coder_eval_dagster.core.yamlio import DEEPER_HINT, SHALLOWER_HINT, parse_document

QUOTE_HINT = 'a value that contains ": " must be quoted, e.g. description: "a: b"'
CRITERIA = "success_criteria:\n  - type: file_exists\n    path: a.txt\n"


def syntax_message(text: str) -> str:
    """What loading ``text`` says of its one syntax error."""
    with pytest.raises(InvalidInput) as refused:
        parse_document(Path("t.yaml"), text)
    (problem,) = refused.value.problems
    return problem.message


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (CRITERIA + "     description: a exists\n", "(line 4, column 17): mapping values are not allowed"),
        ("agent:\n  type: none\n   model: m\n", "(line 3, column 9): mapping values are not allowed"),
        ("task_id: t\n description: d\n", "(line 2, column 13): mapping values are not allowed"),
    ],
)
def test_a_key_indented_one_space_too_far_is_said_to_be(text: str, said: str) -> None:
    message = syntax_message(text)
    assert said in message
    assert message.endswith(f"; {DEEPER_HINT}")
    assert QUOTE_HINT not in message


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (CRITERIA + "   description: a exists\n", "(line 4, column 4): did not find expected '-' indicator"),
        (CRITERIA + "  description: a exists\n", "(line 4, column 3): did not find expected '-' indicator"),
        ("agent:\n    type: none\n   model: m\n", "(line 3, column 4): did not find expected key"),
    ],
)
def test_a_key_indented_one_space_too_little_is_said_to_be(text: str, said: str) -> None:
    message = syntax_message(text)
    assert said in message
    assert message.endswith(f"; {SHALLOWER_HINT}")


@pytest.mark.parametrize(
    "text",
    [
        "task_id: t\ndescription: a: b\n",
        CRITERIA + "    description: a: b\n",
        "task_id: t\nagent:\n  model: a: b\n",  # deeper than the key above, whose value is not a plain scalar
    ],
)
def test_a_value_holding_colon_space_still_gets_the_quoting_hint(text: str) -> None:
    message = syntax_message(text)
    assert message.endswith(f"; {QUOTE_HINT}")


def test_a_deeper_line_under_a_block_scalar_is_its_text_not_an_error() -> None:
    assert parse_document(Path("t.yaml"), "a: |\n  x\n   y: z\nb: c\n").data == {"a": "x\n y: z\n", "b": "c"}


def test_a_tab_keeps_its_own_hint() -> None:
    assert syntax_message("a:\n  b: c\n\td: e\n").endswith("; a tab cannot indent YAML: indent with spaces")
