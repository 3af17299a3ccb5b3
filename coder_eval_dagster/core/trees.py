"""Walking and removing folders an agent made.

How deep its folders go is the agent's choice, and Python 3.11's ``os.walk``
and ``shutil.rmtree`` recurse: a few thousand nested folders raised
RecursionError out of a prune, a sandbox's removal or a judge's cleanup.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

REMOVE_TIMEOUT_S = 600


def walk(top: Path) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top)`` top-down without following links (a link to a folder is among the files), iterative:
    ``dirs`` may be sorted or pruned in place, and is then walked in that order."""
    stack = [os.fspath(top)]
    while stack:
        here = stack.pop()
        dirs: list[str] = []
        files: list[str] = []
        try:
            with os.scandir(here) as entries:
                for entry in entries:
                    (dirs if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
        except OSError:
            continue
        yield here, dirs, files
        stack.extend(os.path.join(here, name) for name in reversed(dirs))


def remove_tree(path: Path, ignore_errors: bool = False) -> None:
    """``shutil.rmtree``, finished by ``rm -rf`` where the tree is deeper than Python's recursion."""
    try:
        shutil.rmtree(path, ignore_errors=ignore_errors)
    except RecursionError:
        done = subprocess.run(
            ["rm", "-rf", "--", os.fspath(path)], capture_output=True, text=True, timeout=REMOVE_TIMEOUT_S, check=False
        )
        if done.returncode != 0 and not ignore_errors:
            raise OSError(f"could not remove {path}: {done.stderr.strip()[-400:]}") from None
