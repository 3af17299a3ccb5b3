"""A real PostgreSQL server (Debian's binaries, as the postgres user when we are root) on 127.0.0.1."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa

from .dagster_services import free_port

BINARIES = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
# A dagster.yaml on Dagster's own PostgreSQL storages (its shorthand), for a ``{url}``; coder-eval's own are
# storage_postgres.STORAGES_YAML.
DAGSTER_STORAGES_YAML = 'storage:\n  postgres:\n    postgres_url: "{url}"\n'


def _as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: drop to the postgres user when we are root."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextmanager
def running_postgres() -> Iterator[str]:
    """A fresh server in a temporary folder; its psycopg2 URL; stopped and removed afterwards."""
    if not BINARIES:
        raise RuntimeError("PostgreSQL server binaries missing: .ci/run installs Debian's postgresql package")
    bin_dir = Path(BINARIES[-1])
    # not under pytest's tmp folders: they are root-only, and the server runs as postgres
    folder = Path(tempfile.mkdtemp(prefix="coder-eval-pg-"))
    data = folder / "data"
    data.mkdir()
    if os.geteuid() == 0:
        for path in (folder, data):
            shutil.chown(path, "postgres", "postgres")
    port = free_port()
    subprocess.run(
        _as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]),
        check=True,
        capture_output=True,
        timeout=120,
    )
    options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1"
    subprocess.run(
        _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(data / "log"), "-w", "start"]),
        check=True,
        capture_output=True,
        timeout=120,
    )
    try:
        # SQLAlchemy 2.1 defaults to psycopg 3; dagster-postgres needs psycopg2 (its NOTIFY is interpolated client-side)
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(folder, ignore_errors=True)


def new_database(server: str, name: str) -> str:
    """A new empty database ``name`` on the server at ``server`` (a URL of running_postgres); its URL."""
    engine = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(sa.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return f"{server.rsplit('/', 1)[0]}/{name}"
