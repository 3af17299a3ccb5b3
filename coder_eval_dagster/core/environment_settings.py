"""The CODER_EVAL_* settings the code location reads from its environment as it loads.

A value that is not what its name says is one line naming it (the CLI's exit 2; a code location that does not
load, saying why), never an internal error: the CLI loads the code location's module too, and a bad
``CODER_EVAL_CONCURRENCY`` ended every ``coder-eval run`` as a bug in coder-eval.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from .problems import clipped


class SettingError(ValueError):
    """A CODER_EVAL_* variable whose value cannot be used."""


def whole_number(name: str, meaning: str, environ: Mapping[str, str] = os.environ) -> int | None:
    """The variable as a whole number ≥ 0; None when unset or empty. ``meaning`` says what 0 means."""
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    if not re.fullmatch(r"[0-9]{1,9}", raw):  # (str.isdigit takes "²", which int() refuses)
        raise SettingError(f"{name}={clipped(raw, 40)!r}: expected a whole number, at most 9 digits ({meaning})")
    return int(raw)
