"""The agent judge's copy of a sandbox whose processes may still be changing it (core/sandbox/snapshot.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from coder_eval_dagster.core.sandbox import snapshot
from coder_eval_dagster.core.sandbox.snapshot import copy_live_sandbox


def test_a_folder_swapped_for_a_link_after_it_was_listed_is_copied_as_the_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret").write_text("HOST-ONLY")
    sandbox = tmp_path / "sandbox"
    (sandbox / "d").mkdir(parents=True)
    (sandbox / "d" / "secret").write_text("decoy")
    listed = snapshot._enter

    def swap_after_listing(folders, fd, into, base):  # type: ignore[no-untyped-def]
        listed(folders, fd, into, base)
        if base == snapshot.PurePosixPath("."):  # the process saw the copy start: d becomes a link to the host
            os.rename(sandbox / "d", sandbox / "d_real")
            os.symlink(host, sandbox / "d")

    monkeypatch.setattr(snapshot, "_enter", swap_after_listing)
    copy = tmp_path / "copy"
    copy_live_sandbox(sandbox, copy, [])

    assert (copy / "d").is_symlink()
    assert os.readlink(copy / "d") == str(host)
    assert not any("HOST-ONLY" in p.read_text() for p in copy.rglob("*") if p.is_file() and not p.is_symlink())


def test_links_fifos_ignored_names_and_a_deep_tree(tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "main.py").write_text("print('hi')")
    (sandbox / "main.py").chmod(0o751)
    (sandbox / "etc").symlink_to("/etc")
    os.mkfifo(sandbox / "pipe")
    (sandbox / "node_modules").mkdir()
    (sandbox / "node_modules" / "x.js").write_text("x")
    make_deep_folders(sandbox, 1500)  # deeper than Python's recursion limit: the walk is iterative
    copy = tmp_path / "copy"
    left = copy_live_sandbox(sandbox, copy, ["node_modules"])

    assert left.too_deep == ["/".join(["a"] * (snapshot.MAX_DEPTH + 1))]  # said, for the judge's record
    assert left.too_large == []
    assert (copy / "main.py").read_text() == "print('hi')"
    assert (copy / "main.py").stat().st_mode & 0o777 == 0o751
    assert (copy / "etc").is_symlink() and not (copy / "etc").resolve().is_relative_to(copy)
    assert not (copy / "pipe").exists() and not (copy / "node_modules").exists()
    depth = len((copy / "a").relative_to(copy).parts)
    while (copy / Path(*["a"] * (depth + 1))).is_dir():
        depth += 1
    assert depth == snapshot.MAX_DEPTH
    subprocess.run(["rm", "-rf", str(sandbox), str(copy)], check=True, timeout=60)  # (pytest's removal recurses)


def test_sparse_files_past_the_copy_bound_are_left_out_and_said(tmp_path: Path, monkeypatch) -> None:
    """A sparse file costs the agent no disk; copied whole, a `truncate -s 1T` filled this machine's (an agent
    judge's workspace is copied under /tmp). Files past the bound in all are left out and named."""
    monkeypatch.setattr(snapshot, "MAX_COPY_BYTES", 10 << 20)
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    (sandbox / "a_small.txt").write_text("kept")
    with open(sandbox / "b_sparse.bin", "wb") as sparse:
        sparse.truncate(1 << 40)  # 1 TiB, no block used
    (sandbox / "c_fits.bin").write_bytes(b"x" * (6 << 20))
    (sandbox / "d_over.bin").write_bytes(b"y" * (6 << 20))  # 12 MiB with c: past the bound
    copy = tmp_path / "copy"

    left = copy_live_sandbox(sandbox, copy, [])

    assert left.too_large == ["b_sparse.bin", "d_over.bin"]
    assert sorted(p.name for p in copy.iterdir()) == ["a_small.txt", "c_fits.bin"]
    assert (copy / "c_fits.bin").stat().st_size == 6 << 20


def make_deep_folders(root: Path, depth: int) -> None:
    """``a/a/a/...`` ``depth`` folders deep under ``root``, as an agent makes it (each in the last one)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("a", dir_fd=fd)
        inner = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
