"""Bounded reads of user and agent files: regular files only, never more than a cap.

A path may name a device (``/dev/zero``), a FIFO or a folder, and a file may be
huge; reading any of them whole would hang or exhaust memory. Every file the
harness reads on a user's or an agent's behalf goes through here, and so does
every file it opens in a sandbox on an agent's behalf (``open_beneath``: the
replay agent's Write, Edit and Read, which the harness carries out itself).
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import functools
import os
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath

MiB = 1024 * 1024
MAX_DOCUMENT_BYTES = 8 * MiB  # a task, experiment or trajectory YAML file, a prompt or reference file
MAX_DATASET_BYTES = 64 * MiB  # one dataset JSONL file
CRITERION_READ_CAP = 8 * MiB  # what a criterion reads of one sandbox file (the rest is ignored, and said so)


class UnreadableFile(ValueError):
    """A file that is not a regular file, or is larger than allowed (the message says which)."""


def regular_file_problem(path: Path, limit: int | None = None) -> str | None:
    """Why ``path`` cannot be read as input (None: it can); never opens the file."""
    try:
        info = path.stat()
    except OSError as exc:
        return f"cannot read file: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        return f"not a regular file: {path}"
    if limit is not None and info.st_size > limit:
        return f"file too large: {info.st_size} bytes (the limit is {limit} bytes)"
    return None


def open_regular(path: Path, follow: bool = True) -> int:
    """A descriptor of ``path`` opened for reading when it is a regular file, else UnreadableFile; a FIFO is never
    waited on. ``follow`` False: a link in the last place is refused (OSError ELOOP), not followed (a path already
    resolved, which a process could swap for a link after)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW))
    return _regular(fd, str(path))


def _regular(fd: int, name: str) -> int:
    """``fd`` when it is a regular file's; else it is closed and UnreadableFile raised."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnreadableFile(f"not a regular file: {name}")
    return fd


MAX_LINKS = 40  # as the kernel's ELOOP
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIRECTORY_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_beneath(
    root: Path,
    relative: str,
    flags: int,
    links_at: PurePosixPath | None = None,
    make_parents: bool = False,
    root_name: str = "the sandbox",
) -> int:
    """A descriptor of the regular file ``relative`` names in the folder ``root``, opened with ``flags`` (O_RDONLY,
    O_RDWR, O_WRONLY | O_CREAT...), for a file the harness touches on behalf of a process confined to ``root``.

    The path is walked one name at a time from a descriptor of ``root``, each folder opened by name in the one
    before it without following a link, so nothing the process changes meanwhile can make the walk leave ``root``:
    a link is read and its target walked the same way (an absolute one from ``root`` when it is under
    ``links_at``, where the process sees ``root``; any other absolute link, or a ``..`` above ``root``, leaves it:
    PermissionError). ``relative`` itself may be absolute under ``links_at`` (as the process names its files:
    Claude Code's ``/sandbox/app.py``), walked from ``root`` as such a link is. The file itself is opened without
    following a link or waiting (O_NOFOLLOW, O_NONBLOCK): a
    FIFO, a socket, a device or a folder is UnreadableFile, never opened for long. ``make_parents``: missing
    folders on the way are made (as ``mkdir -p``). ``root_name``: what the PermissionError calls ``root``."""
    leaves = PermissionError(f"path {relative!r} leaves {root_name}")
    path = PurePosixPath(relative)
    if path.is_absolute() and links_at is not None and path.is_relative_to(links_at):
        path = path.relative_to(links_at)  # (`/sandbox/../x` is `../x`: above root, it leaves)
    folders = [os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)]  # the walk so far; [0] is root
    owner = _made_for(folders[0]) if make_parents or flags & os.O_CREAT else None
    parts, links = list(path.parts), 0
    try:
        while parts:
            part = parts.pop(0)
            if part.startswith("/") or (part == ".." and len(folders) == 1):  # ("//" is an anchor too)
                raise leaves
            if part == ".":
                continue
            if part == "..":
                os.close(folders.pop())
                continue
            try:
                if not parts:
                    return _owned(
                        _regular(os.open(part, flags | _FILE_FLAGS, 0o666, dir_fd=folders[-1]), relative), owner
                    )
                folders.append(_open_folder(part, folders[-1], make_parents, owner))
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    if exc.errno == errno.ENXIO:  # a FIFO no process reads, a socket
                        raise UnreadableFile(f"not a regular file: {relative}") from None
                    raise type(exc)(exc.errno, exc.strerror, relative) from None
                target = _link_target(part, folders[-1], exc, relative)
            links += 1
            if links > MAX_LINKS:
                raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), relative)
            if target is None:  # no longer a link: look again
                parts.insert(0, part)
                continue
            if target.is_absolute():
                if links_at is None or not target.is_relative_to(links_at):
                    raise leaves
                while len(folders) > 1:
                    os.close(folders.pop())
                target = target.relative_to(links_at)
            parts = [*target.parts, *parts]
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), relative)
    finally:
        for fd in folders:
            os.close(fd)


def _open_folder(name: str, parent: int, make: bool, owner: tuple[int, int] | None = None) -> int:
    """An O_PATH descriptor of the folder ``name`` in ``parent``, never through a link (ENOTDIR then); one it
    makes is ``owner``'s."""
    try:
        return os.open(name, _DIRECTORY_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not make:
            raise
    with contextlib.suppress(FileExistsError):  # made meanwhile: opened as any other
        os.mkdir(name, dir_fd=parent)
        if owner is not None:  # (a link swapped in meanwhile is changed itself, never what it points to)
            os.chown(name, *owner, dir_fd=parent, follow_symlinks=False)
    return os.open(name, _DIRECTORY_FLAGS, dir_fd=parent)


def _made_for(root: int) -> tuple[int, int] | None:
    """Who what the harness (root) makes in ``root`` on a confined process's behalf belongs to: the owner of
    ``root`` when that is another user (a container's: a file the replay's Write made is then its own Bash's to
    change); None when the harness's own user owns it."""
    found = os.fstat(root)
    return (found.st_uid, found.st_gid) if os.geteuid() == 0 and found.st_uid != 0 else None


def _owned(fd: int, owner: tuple[int, int] | None) -> int:
    if owner is not None:
        os.fchown(fd, *owner)
    return fd


def _link_target(name: str, parent: int, refused: OSError, relative: str) -> PurePosixPath | None:
    """Where the link ``name`` in ``parent`` points (None: it is no longer a link); ``refused`` (as about
    ``relative``) when ``name`` is something else that is not a folder."""
    try:
        return PurePosixPath(os.readlink(name, dir_fd=parent))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None  # removed meanwhile
        if exc.errno != errno.EINVAL:
            raise type(exc)(exc.errno, exc.strerror, relative) from None
    if refused.errno == errno.ELOOP:
        return None  # a link swapped back for a file: open it again
    raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), relative)


def read_capped_fd(fd: int, cap: int) -> bytes:
    """Up to ``cap`` + 1 bytes from ``fd``'s position (one more than ``cap``: whether there was more)."""
    chunks, remaining = [], cap + 1
    while remaining > 0:
        chunk = os.read(fd, min(remaining, MiB))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd`` from its position."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_regular(path: Path, cap: int, follow: bool = True) -> tuple[bytes, int]:
    """Up to ``cap`` + 1 bytes of a regular file (``open_regular``), and its size."""
    fd = open_regular(path, follow)
    try:
        return read_capped_fd(fd, cap), os.fstat(fd).st_size
    finally:
        os.close(fd)


def read_input_text(path: Path, limit: int = MAX_DOCUMENT_BYTES) -> str:
    """A whole input file as UTF-8 text; UnreadableFile when it is special or over ``limit``."""
    data, size = _read_regular(path, limit)
    if len(data) > limit:
        raise UnreadableFile(f"file too large: {max(size, len(data))} bytes (the limit is {limit} bytes)")
    return data.decode("utf-8")


def read_text_beneath(
    root: Path,
    relative: str,
    cap: int = CRITERION_READ_CAP,
    links_at: PurePosixPath | None = None,
    root_name: str = "the sandbox",
) -> tuple[str, bool]:
    """The first ``cap`` bytes of ``relative`` in ``root`` as text (:func:`read_opened_text`), and whether it was
    longer; the path walked by :func:`open_beneath`: a process left in ``root`` cannot swap a folder on the way for
    a link between the walk and the read."""
    opened = functools.partial(open_beneath, root, relative, os.O_RDONLY, links_at, root_name=root_name)
    return read_opened_text(opened, cap, relative)


def opened_regular(opened: Callable[[], int], shown: str) -> int:
    """The descriptor ``opened`` returns (:func:`open_regular`, :func:`open_beneath`); FileNotFoundError naming
    ``shown`` when there is no regular file there (missing, a folder, a FIFO, a link refused), so a caller tells a
    file it can read from one it cannot with one exception."""
    try:
        return opened()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise FileNotFoundError(f"file not found: {shown}") from None
    except UnreadableFile:
        raise FileNotFoundError(f"not a regular file: {shown}") from None
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise FileNotFoundError(f"not a regular file: {shown} (a link put there after it was resolved)") from None


def universal_newlines(text: str) -> str:
    """``text`` as Python's text mode reads it (``open(path)``, ``subprocess.run(text=True)``: universal newlines):
    each ``\\r\\n`` and each lone ``\\r`` becomes ``\\n``. What coder_eval's criteria see of a file or of a
    ``run_command``'s output, so a pattern's ``$``, an include spanning lines and an exact stdout match a file with
    Windows or old-Mac line endings there and here alike."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_opened_text(opened: Callable[[], int], cap: int, shown: str) -> tuple[str, bool]:
    """The first ``cap`` bytes of the regular file ``opened`` opens, as text (newlines translated as text mode
    does: :func:`universal_newlines`), and whether it was longer."""
    fd = opened_regular(opened, shown)
    try:
        data = read_capped_fd(fd, cap)
    finally:
        os.close(fd)
    truncated = len(data) > cap
    return universal_newlines(decoded(data[:cap])), truncated


def is_real_folder(path: Path) -> bool:
    """A folder itself, not a link to one: a kept sandbox is graded, handed over and walked as root, and a run
    folder handed around may link its ``sandbox/`` anywhere on the machine (``/``)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def real_path(path: Path) -> Path:
    """``path`` through its links, as ``Path.resolve`` gives it, except that a link loop is a path (whose reading
    then fails as a file's does), not Python 3.11's ``RuntimeError``."""
    return Path(os.path.realpath(path))


UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def decoded(data: bytes) -> str:
    """A file's bytes as text: UTF-8 (an invalid byte U+FFFD), or UTF-16 when a byte-order mark opens it (what
    Windows PowerShell writes by default). Read as UTF-8, UTF-16 text is NUL bytes between its letters: an
    ``excludes`` or a ``must_match: false`` would pass a file holding the very text it forbids."""
    if data.startswith(UTF16_BOMS):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8", errors="replace")


def truncation_note(name: str, truncated: bool, cap: int = CRITERION_READ_CAP) -> dict[str, str]:
    """The criterion-details entry saying a file was read only in part (empty when it was read whole)."""
    if not truncated:
        return {}
    return {"truncated": f"{name} is larger than {cap} bytes; only its first {cap} bytes were read"}
