"""Session-wide fixtures: the scripted Messages API, and the Docker engine the docker-driver tests need."""

from __future__ import annotations

import os

import pytest

from .support.docker_engine import SESSION_ENV, ensure_engine_and_image, stop_engine_if_started
from .support.fake_anthropic import FakeAnthropic, scripted_api_environment
from .support.fake_http import serving

# The longest tests (a cron tick waited for under a real daemon, backfills through a webserver, the Docker
# deployment), first: xdist hands tests out in collection order, and one of these started last kept a worker busy
# minutes after the other had finished (longest first evens the two workers' loads).
LONGEST_FIRST = (
    "tests/system/test_automation.py::test_sensor_and_schedule_under_the_daemon",
    "tests/dagster/test_deploy_docker.py::",
    "tests/dagster/test_webserver_backfill.py::",
    "tests/system/test_dev_backfill.py::",
    "tests/system/test_codex_failures_as_recorded.py::test_an_api_answering_500",  # Codex retries a 500: ~3 min
)


def pytest_configure(config: pytest.Config) -> None:
    """The controlling process names the session for its xdist workers (they inherit its environment): the Docker
    engine is stopped at its end only if no other session uses it."""
    if not hasattr(config, "workerinput"):
        os.environ[SESSION_ENV] = str(os.getpid())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)), len(LONGEST_FIRST))

    items.sort(key=rank)  # stable: the rest keep their order


@pytest.fixture(autouse=True, scope="session")
def own_dagster_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A test that runs the CLI in this process without naming an instance gets one of the session's, not the
    default (``.dagster`` of the folder pytest runs in: the repository)."""
    os.environ.setdefault("DAGSTER_HOME", str(tmp_path_factory.mktemp("dagster_home")))


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    """Point the real clients at a scripted server; record every request and proxy attempt."""
    yield from serving(monkeypatch, FakeAnthropic, scripted_api_environment)


@pytest.fixture(scope="session")
def docker_image() -> str:
    """The sandbox image on a running engine (the engine is started and the image built when absent)."""
    return ensure_engine_and_image()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In the controlling process only (after every xdist worker): stop a dockerd the tests started."""
    if not hasattr(session.config, "workerinput"):
        stop_engine_if_started()
