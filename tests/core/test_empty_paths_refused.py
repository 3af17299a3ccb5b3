"""A path argument that names no usable folder is a usage error in one line, exit 2. An empty one (an unset
variable: ``coder-eval compare "$RUN"``) is never taken as the current folder (``evaluate t.yaml ''`` graded it,
``instance init ''`` wrote there, ``compare RUN -o ''`` crashed with exit 3); a missing one or a file is never
worked on as if it were an empty folder (``prune --runs-dir`` with a typo pruned nothing and said it did).
Argument checks: in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.helpers import run_cli


@pytest.mark.parametrize(
    "args",
    [
        ("instance", "init", ""),
        ("instance", "unpack", ""),
        ("evaluate", "t.yaml", ""),
        ("evaluate", "", "."),
        ("evaluate", "t.yaml", "work", "--run-dir", ""),
        ("evaluate", "t.yaml", "work", "--runs-dir", ""),
        ("export", "", "--format", "atif"),
        ("export", "run", "--format", "atif", "--out", ""),
        ("prune", "--keep-days", "1", "--runs-dir", "", "--dry-run"),
        ("compare", ""),
        ("compare", "run", ""),
        ("compare", "run", "-o", ""),
        ("history", ""),
        ("history", "runs", "-o", ""),
    ],
)
def test_an_empty_path_is_a_usage_error_never_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    before = sorted(tmp_path.iterdir())
    outcome = run_cli(*args)
    assert outcome.code == 2 and len(outcome.err.strip().splitlines()) == 1, outcome.err
    assert "empty value" in outcome.err and "Traceback" not in outcome.err
    assert sorted(tmp_path.iterdir()) == before  # nothing written into the current folder


def refused(args: tuple[str | Path, ...], *words: str) -> str:
    outcome = run_cli(*args)
    assert outcome.code == 2 and len(outcome.err.strip().splitlines()) == 1, outcome.err
    assert all(word in outcome.err for word in words), outcome.err
    return outcome.out


def test_instance_unpack_of_a_home_that_is_not_a_folder(tmp_path: Path) -> None:
    refused(("instance", "unpack", tmp_path / "no-such-home"), "no-such-home", "no such folder")
    (tmp_path / "home.txt").write_text("x")
    refused(("instance", "unpack", tmp_path / "home.txt"), "home.txt", "not a folder")


def test_prune_of_a_runs_folder_that_is_not_there_or_a_file(tmp_path: Path) -> None:
    said = refused(("prune", "--keep-days", "1", "--runs-dir", tmp_path / "nonexist"), "nonexist", "no such folder")
    (tmp_path / "a-file").write_text("x")
    said += refused(("prune", "--keep-days", "1", "--runs-dir", tmp_path / "a-file"), "a-file", "not a folder")
    assert "pruned" not in said
