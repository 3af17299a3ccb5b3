"""The Dagster home has one spelling (core/places.py): the CLI's instance, the preflight, the sandbox's hidden
places, the reference and template copies all read it, as given or resolved where they compare real paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder_eval_dagster.core import places
from coder_eval_dagster.core.reference import refused_folder
from coder_eval_dagster.core.sandbox.holder import harness_places


def test_every_reader_of_the_dagster_home_reads_its_one_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coder_eval_dagster.launch import local_home

    real = tmp_path / "instance"
    real.mkdir()
    link = tmp_path / "linked"
    link.symlink_to(real)
    monkeypatch.setenv("DAGSTER_HOME", str(link))
    assert places.dagster_home() == link  # as given: a message names what the user wrote
    assert local_home() == real
    assert str(real) in harness_places()
    assert refused_folder(link / "storage") == "it lies in the Dagster home"


def test_without_dagster_home_it_is_dot_dagster_where_the_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coder_eval_dagster.launch import local_home

    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert places.dagster_home() == Path(places.DEFAULT_DAGSTER_HOME) == Path(".dagster")
    assert local_home() == tmp_path.resolve() / ".dagster"
    assert str(tmp_path.resolve() / ".dagster") in harness_places()


def test_the_user_home_is_its_real_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "home"
    real.mkdir()
    (tmp_path / "linked-home").symlink_to(real)
    monkeypatch.setenv("HOME", str(tmp_path / "linked-home"))
    assert places.user_home() == real
    assert refused_folder(tmp_path / "linked-home") == "it is the user's home"
