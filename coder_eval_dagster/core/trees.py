"""Walking and removing folders an agent made.

How deep its folders go is the agent's choice, and Python 3.11's ``os.walk``
and ``shutil.rmtree`` recurse: a few thousand nested folders raised
RecursionError out of a prune, a sandbox's removal or a judge's cleanup.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

from .files import is_real_folder

REMOVE_TIMEOUT_S = 600
PRIVILEGE_BITS = stat.S_ISUID | stat.S_ISGID
CAPABILITIES_XATTR = "security.capability"


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


def drop_privileges(top: Path) -> None:
    """No setuid or setgid bit, no file capability left on a file under ``top``.

    An agent is root in its user namespace, which is the harness's user on
    the host: its ``chmod u+s`` or ``setcap`` in the sandbox (where the mount
    is nosuid) made a program that, run from the preserved sandbox on the
    host, gave any local user the harness's (as root on CI: root). A folder
    the agent made unreadable (``chmod 311``) is made readable to walk it:
    others could still reach a file in it by name.
    """
    if not is_real_folder(top):  # a link to a folder is not walked: it leads anywhere (`/`)
        return
    stack = [os.fspath(top)]
    while stack:
        here = stack.pop()
        for entry in _entries(here):
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    stack.append(entry.path)
                    continue
                if not stat.S_ISREG(mode):
                    continue
                if mode & PRIVILEGE_BITS:
                    os.chmod(entry.path, stat.S_IMODE(mode) & ~PRIVILEGE_BITS, follow_symlinks=False)
                os.removexattr(entry.path, CAPABILITIES_XATTR, follow_symlinks=False)
            except OSError:  # ENODATA: no capability (the common case); gone meanwhile; a file system without xattrs
                continue


def _entries(folder: str) -> list[os.DirEntry[str]]:
    """The folder's entries; its owner's read and search rights given back first if the listing needs them."""
    try:
        return _listing(folder)
    except PermissionError:
        with contextlib.suppress(OSError):
            os.chmod(folder, stat.S_IMODE(os.lstat(folder).st_mode) | stat.S_IRWXU, follow_symlinks=False)
    except OSError:
        return []
    try:
        return _listing(folder)
    except OSError:
        return []


def _listing(folder: str) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as entries:
        return list(entries)
