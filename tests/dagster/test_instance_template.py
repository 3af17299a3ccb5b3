"""The shipped pre-migrated databases match what the pinned Dagster creates (guards storage.py's templates)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from coder_eval_dagster import storage
from coder_eval_dagster.launch import local_instance
from coder_eval_dagster.storage import HOME_DATABASES, RUN_SHARD, TEMPLATE_DIR, build_templates


def _schema(path: Path) -> tuple[list[tuple[str, str]], list[tuple[str, ...]], list[str]]:
    with sqlite3.connect(path) as connection:
        tables = connection.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
        version = connection.execute("SELECT * FROM alembic_version").fetchall()
        names = [row[0] for row in tables]
        markers = (
            connection.execute("SELECT name FROM secondary_indexes").fetchall() if "secondary_indexes" in names else []
        )
    return tables, version, sorted(str(m[0]) for m in markers)


def test_templates_match_a_freshly_created_instance(tmp_path: Path) -> None:
    build_templates(tmp_path)
    for name in [*HOME_DATABASES, RUN_SHARD]:
        assert _schema(TEMPLATE_DIR / name) == _schema(tmp_path / name), (
            f"{name}: run python -m coder_eval_dagster.storage"
        )


def test_a_fresh_home_starts_from_the_templates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with local_instance() as instance:
        assert instance.get_runs() == []
    for name, where in HOME_DATABASES.items():
        assert (tmp_path / where).read_bytes()[:16] == b"SQLite format 3\x00"
        assert _schema(tmp_path / where) == _schema(TEMPLATE_DIR / name)


def test_stamped_databases_open_without_reading_the_migration_scripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run and schedule storages skip Dagster's revision check on a stamped database, and only then."""
    from dagster._core.storage.runs.sqlite import sqlite_run_storage
    from dagster._core.storage.schedules.sqlite import sqlite_schedule_storage

    checked: list[str] = []
    for module in (sqlite_run_storage, sqlite_schedule_storage):
        real = module.check_alembic_revision
        monkeypatch.setattr(module, "check_alembic_revision", lambda *a, real=real: checked.append("x") or real(*a))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "templated"))
    with local_instance() as instance:
        assert instance.get_runs() == [] and list(instance.all_instigator_state()) == []
    assert checked == []
    monkeypatch.setattr(storage, "TEMPLATE_DIR", tmp_path / "none")  # no template: Dagster creates and stamps them
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "created"))
    with local_instance() as instance:
        assert instance.get_runs() == []
    assert len(checked) == 2
    for where in ("history/runs.db", "schedules/schedules.db"):
        assert storage._stamped(tmp_path / "created" / where)


def test_the_storage_refuses_another_dagster_at_import() -> None:
    """storage.py is built on the pinned Dagster's private internals: another version is one clear error at import,
    never a half-working event log; the pin it checks is pyproject's."""
    import subprocess
    import sys

    from coder_eval_dagster.storage import PINNED_DAGSTER

    pyproject = (Path(__file__).parent.parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"dagster=={PINNED_DAGSTER}"' in pyproject
    fake = "import importlib.metadata as m; real = m.version; m.version = lambda n: '1.99.0' if n == 'dagster' else real(n)"
    done = subprocess.run(
        [sys.executable, "-c", f"{fake}; import coder_eval_dagster.storage"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert f"built on Dagster {PINNED_DAGSTER}'s storage internals, but Dagster 1.99.0 is installed" in done.stderr
