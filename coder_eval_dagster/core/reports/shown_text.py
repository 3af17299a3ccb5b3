"""Text an evaluation produced (its output, its file names), made safe to show to a person on a terminal or in a
log line."""

from __future__ import annotations

import re
from typing import Protocol

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_text(text: str) -> str:
    """Text shown on a terminal with its control characters written out (``\\x1b``): an evaluation's output could
    otherwise set the window title, write the clipboard (OSC 52) or clear the screen of whoever reads it."""
    return CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def one_line(text: str) -> str:
    """``terminal_text`` on one line: a file name or output holding a newline must not start a line of its own
    (an agent could print a forged ``PASSED`` under the harness's own)."""
    return " ".join(terminal_text(text).replace("\r", "\n").splitlines())


def skipped_file(path: str, reason: str) -> str:
    """A skipped task file and why, its path said once: a problem in the file itself already starts with it
    (``bad.yaml:5: ...``); one in a file it names (its dataset) does not."""
    return reason if reason.startswith(f"{path}:") else f"{path}: {reason}"


class Graded(Protocol):
    score: float
    passed: bool
    pass_threshold: float


def criterion_score(criterion: Graded, digits: int = 2) -> str:
    """A criterion's score to ``digits`` places, with as many more as a failing score needs not to read as its
    threshold or above (0.6999999 failing 0.7 shows as 0.6999999, not 0.70)."""
    places = digits
    while not criterion.passed and float(f"{criterion.score:.{places}f}") >= criterion.pass_threshold and places < 15:
        places += 1
    text = f"{criterion.score:.{places}f}"
    return text if places == digits else text.rstrip("0")
