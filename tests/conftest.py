"""Session-wide fixtures: the scripted Messages API, and the Docker engine the docker-driver tests need."""

from __future__ import annotations

import pytest

from .docker_engine import ensure_engine_and_image, stop_engine_if_started
from .fake_anthropic import FakeAnthropic
from .fake_http import serving

API_KEY = "sk-ant-test-0123456789abcdef"


def _environment(url: str) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": API_KEY,
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "HTTPS_PROXY": url,
        "HTTP_PROXY": url,
        "NO_PROXY": "127.0.0.1,localhost",
        "MY_SERVICE_TOKEN": "caller-secret-value-42",
        "API_BACKEND": "direct",
    }


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    """Point the real clients at a scripted server; record every request and proxy attempt."""
    yield from serving(monkeypatch, FakeAnthropic, _environment)


@pytest.fixture(scope="session")
def docker_image() -> str:
    """The sandbox image on a running engine (the engine is started and the image built when absent)."""
    return ensure_engine_and_image()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In the controlling process only (after every xdist worker): stop a dockerd the tests started."""
    if not hasattr(session.config, "workerinput"):
        stop_engine_if_started()
