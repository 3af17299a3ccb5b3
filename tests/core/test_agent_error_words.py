"""What an agent's error says, read as its error_category (docs/running.md, Statuses), and where a model proxy's
grant URL in it really went."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from coder_eval_dagster.core.agents.codex import turn_error
from coder_eval_dagster.core.error_categories import error_details
from coder_eval_dagster.core.model_proxy import named_in


def category(message: str) -> str:
    details = error_details("ERROR", message, "agent")
    assert details is not None
    return str(details["error_category"])


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        # opencode's errors with the HTTP status of the API's answer
        ("APIError 401: invalid x-api-key", "agent_auth_error"),
        ("APIError 403: forbidden", "agent_auth_error"),
        ("APIError 429: slow down", "agent_rate_limit"),
        ("APIError 500: upstream failed", "agent_api_error"),
        ("APIError 503: try later", "agent_api_error"),
        # codex's stream that ended without its response.completed (a body that was no event stream)
        (
            "RuntimeError: codex turn failed: stream disconnected before completion: stream closed before "
            'response.completed (codexErrorInfo="other")',
            "agent_api_error",
        ),
        # a route or setting the harness lacks
        (
            "opencode provider 'google' is not routed by coder-eval; use one of custom, anthropic, openai",
            "agent_config_error",
        ),
        ("model custom/... needs OPENCODE_BASE_URL and OPENCODE_API_KEY", "agent_config_error"),
        ("model openai/... needs OPENAI_API_KEY", "agent_config_error"),
        ("CodexRouteError: the codex agent needs CODEX_API_KEY (and optionally CODEX_BASE_URL)", "agent_config_error"),
        ("the codex agent needs the codex extra: pip install 'coder-eval-dagster[codex]'", "agent_config_error"),
        (
            "the opencode agent needs agent.model as provider/model (e.g. custom/my-model), not 'x'",
            "agent_config_error",
        ),
        # still the agent's own failure
        ('RuntimeError: codex turn failed: the sandbox refused (codexErrorInfo="sandboxError")', "agent_crash"),
    ],
)
def test_an_agent_error_is_categorised_by_what_it_says(message: str, expected: str) -> None:
    assert category(message) == expected


def codex_failure(message: str, info: Any) -> str:
    """The error of a failed codex turn, as its agent records it."""
    return f"RuntimeError: codex turn failed: {turn_error(SimpleNamespace(message=message, codex_error_info=info))}"


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        ("internalServerError", "agent_api_error"),  # a 500 Codex names by its kind alone
        ("serverOverloaded", "agent_api_error"),
        ("flexUnavailable", "agent_api_error"),
        ("rateLimitExceeded", "agent_rate_limit"),
        ("usageLimitExceeded", "agent_billing_error"),
        ("unauthorized", "agent_auth_error"),
        ({"responseTooManyFailedAttempts": {"httpStatusCode": None}}, "agent_api_error"),
        ({"responseTooManyFailedAttempts": {"httpStatusCode": 429}}, "agent_rate_limit"),
        ({"httpConnectionFailed": {"httpStatusCode": 401}}, "agent_auth_error"),
        ({"httpConnectionFailed": {"httpStatusCode": None}}, "agent_api_error"),
        ({"responseStreamDisconnected": {"httpStatusCode": None}}, "agent_api_error"),
        ("contextWindowExceeded", "agent_crash"),
    ],
)
def test_codex_s_error_kinds_name_their_category(info: Any, expected: str) -> None:
    message = codex_failure("We’re currently experiencing high demand, which may cause temporary errors.", info)
    assert category(message) == expected, message


def test_a_codex_500_says_it_was_an_api_error() -> None:
    message = codex_failure("We’re currently experiencing high demand.", "internalServerError")
    assert message.endswith('(codexErrorInfo="internalServerError": API error, the server failed)'), message


def test_a_grant_url_in_an_error_names_the_upstream_url_the_request_went_to() -> None:
    """The grant's path was kept after the upstream's base: ``.../v1/g/<id>/responses``, a URL nobody called."""
    grant, upstream = "http://127.0.0.1:33739/g/d845dacaba7c33f6", "http://127.0.0.1:37813/v1"
    said = f"unexpected status 401 Unauthorized: scripted failure, url: {grant}/responses"
    named = named_in(said, grant, upstream)
    assert named == "unexpected status 401 Unauthorized: scripted failure, url: http://127.0.0.1:37813/v1/responses"
    gateway = named_in("check your inference gateway (127.0.0.1:33739)", grant, upstream)
    assert gateway == f"check your inference gateway (127.0.0.1:33739: coder-eval's model proxy to {upstream})"
    assert named_in(said, None, upstream) == said
