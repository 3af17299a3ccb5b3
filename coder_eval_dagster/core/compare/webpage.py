"""Light page helpers shared by the comparison pages and the runs index (no pandas, scipy or matplotlib)."""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from pathlib import Path

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
th { background: #f3f3f3; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
.passed { color: #1a7f37; } .failed { color: #cf222e; }
"""


def html_page(title: str, body: str) -> str:
    """A self-contained page: inline style and figures, no script, nothing fetched."""
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{body}</body></html>\n"
    )


def relative_to(folder: Path | None) -> Callable[[str], str]:
    """Link targets relative to the folder of the written file (absolute when printed)."""
    if folder is None:
        return lambda target: target
    return lambda target: os.path.relpath(target, folder).replace(os.sep, "/")
