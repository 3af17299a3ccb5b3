"""A host file read as the criteria read a sandbox file (capped, newlines as text mode reads them), by its path."""

from __future__ import annotations

from pathlib import Path

from coder_eval_dagster.core.files import CRITERION_READ_CAP, open_regular, read_opened_text


def read_text_capped(path: Path, cap: int = CRITERION_READ_CAP, follow: bool = True) -> tuple[str, bool]:
    """The first ``cap`` bytes of the regular file ``path`` as text, and whether it was longer; ``follow`` False
    refuses a link in the last place (FileNotFoundError)."""
    return read_opened_text(lambda: open_regular(path, follow), cap, str(path))
