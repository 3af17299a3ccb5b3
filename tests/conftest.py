"""Session-wide services: the Docker engine the docker-driver tests need."""

from __future__ import annotations

import pytest

from .docker_engine import ensure_engine_and_image, stop_engine_if_started


@pytest.fixture(scope="session")
def docker_image() -> str:
    """The sandbox image on a running engine (the engine is started and the image built when absent)."""
    return ensure_engine_and_image()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In the controlling process only (after every xdist worker): stop a dockerd the tests started."""
    if not hasattr(session.config, "workerinput"):
        stop_engine_if_started()
