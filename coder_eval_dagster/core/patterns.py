"""A task author's regular expression run over text an agent wrote, with a deadline.

Python's ``re`` cannot be interrupted: a pattern that backtracks catastrophically (``(a|aa)+c``) over a file
the agent crafted held the scoring step, and the run, for as long as it took. The ``regex`` package reads the
same syntax (its VERSION0 is ``re``'s) and stops a match at a timeout. Patterns are still checked at load by
``re`` (``models.base.check_regex``), so a task file is accepted here exactly when coder_eval accepts it.
"""

from __future__ import annotations

import re
from functools import lru_cache

import regex

MATCH_SECONDS = 10.0  # one search; a sane pattern over a capped read takes milliseconds. The first timeout ends the
# criterion's check, so a criterion waits at most this long; other evaluations go on meanwhile (the GIL is released).

# ``re``'s flag values as task files write them (ASCII is 256 there, 128 in ``regex``).
_FLAGS = {
    re.IGNORECASE: regex.IGNORECASE,
    re.MULTILINE: regex.MULTILINE,
    re.DOTALL: regex.DOTALL,
    re.UNICODE: regex.UNICODE,
    re.VERBOSE: regex.VERBOSE,
    re.ASCII: regex.ASCII,
}


class PatternTimeout(ValueError):
    """A search that ran past its deadline: the criterion scores 0 with this as its error."""


@lru_cache(maxsize=512)
def _compiled(pattern: str, flags: int) -> regex.Pattern[str]:
    translated = regex.VERSION0
    for re_flag, regex_flag in _FLAGS.items():
        if flags & re_flag:
            translated |= regex_flag
    return regex.compile(pattern, translated)


def search(pattern: str, text: str, flags: int = 0, seconds: float = MATCH_SECONDS) -> bool:
    """Whether ``pattern`` (``re`` syntax and flags) occurs in ``text``."""
    try:
        return _compiled(pattern, flags).search(text, timeout=seconds, concurrent=True) is not None
    except TimeoutError:
        raise PatternTimeout(
            f"the pattern {pattern!r} did not finish within {seconds:g} s over {len(text):,} characters "
            "(it backtracks without bound on this text)"
        ) from None
