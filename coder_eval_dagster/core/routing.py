"""API routing: which backend every model call of a run goes through (direct Anthropic API or AWS Bedrock).

One place for the whole run: the claude-code agent, the judges and the
simulated user all take their route from ``current_route()``. The backend
comes from ``API_BACKEND`` unless ``-b/--backend`` overrides it (``configure``);
credentials and endpoints are read from the environment, and never leave the
process (a route carries them in memory only; ``describe`` shows none).
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

Backend = Literal["direct", "bedrock"]
BACKENDS: tuple[Backend, ...] = ("direct", "bedrock")
API_BACKEND_ENV = "API_BACKEND"
DEFAULT_BEDROCK_REGION = "us-east-1"
BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"
_VENDOR = "anthropic."
# A Bedrock id: optional cross-region prefix (us./eu./apac./global.), the vendor, the model, optional -vN:M.
_BEDROCK_ID = re.compile(r"^(?:(?:us|eu|apac|global)\.)?anthropic\.(?P<model>.+?)(?:-v\d+(?::\d+)?)?$")

_override: Backend | None = None


class RouteError(Exception):
    """The model route is not usable (unknown backend, missing credentials)."""


def credential(name: str) -> str | None:
    """The one place a credential or endpoint is read (switch to the credentials accessor here)."""
    return os.environ.get(name) or None


@dataclass(frozen=True)
class ApiRoute:
    backend: Backend
    base_url: str | None = None
    region: str | None = None
    secret: str | None = field(default=None, repr=False)  # ANTHROPIC_API_KEY or AWS_BEARER_TOKEN_BEDROCK

    @property
    def credential_name(self) -> str:
        return "ANTHROPIC_API_KEY" if self.backend == "direct" else "AWS_BEARER_TOKEN_BEDROCK"

    @property
    def judge_transport(self) -> str:
        """``anthropic`` or ``bedrock``; ``none`` when the credentials are missing (judges then fail at dispatch)."""
        if self.secret is None:
            return "none"
        return "anthropic" if self.backend == "direct" else "bedrock"

    def describe(self) -> str:
        if self.backend == "direct":
            return f"anthropic_direct (judge transport: {self.judge_transport})"
        return f"bedrock (region {self.region}, judge transport: {self.judge_transport})"

    def missing_credentials(self) -> str | None:
        """The error a model call reports at dispatch when the route has no credentials."""
        return None if self.secret else f"{self.credential_name} is not set"

    def model_id(self, model: str) -> str:
        return translate_model(model, self.backend)

    def cli_environment(self) -> dict[str, str]:
        """The variables that route the Claude Code CLI (credentials included: for its process only)."""
        if self.secret is None:
            raise RouteError(f"API_BACKEND={self.backend} needs {self.credential_name}")
        if self.backend == "direct":
            env = {"ANTHROPIC_API_KEY": self.secret}
            if self.base_url:
                env["ANTHROPIC_BASE_URL"] = self.base_url
            return env
        env = {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_BEARER_TOKEN_BEDROCK": self.secret, "AWS_REGION": str(self.region)}
        if self.base_url:
            env["ANTHROPIC_BEDROCK_BASE_URL"] = self.base_url
        return env

    def client(self, max_retries: int, timeout: float) -> Any:
        """The anthropic SDK client of this route, made once and shared by the judges of the process.

        Made under a lock: judges starting together would otherwise each build
        a client (its TLS context alone takes tens of milliseconds of CPU).
        """
        key = (self, max_retries, timeout)
        with _clients_lock:
            if key not in _clients:
                _clients[key] = _new_client(self, max_retries, timeout)
            return _clients[key]


_clients: dict[tuple[ApiRoute, int, float], Any] = {}
_clients_lock = threading.Lock()


def _new_client(route: ApiRoute, max_retries: int, timeout: float) -> Any:
    import anthropic

    if route.backend == "direct":
        return anthropic.Anthropic(
            api_key=route.secret, base_url=route.base_url, max_retries=max_retries, timeout=timeout
        )
    return anthropic.AnthropicBedrock(
        api_key=route.secret,
        aws_region=route.region,
        base_url=route.base_url,
        max_retries=max_retries,
        timeout=timeout,
    )


def translate_model(model: str, backend: Backend) -> str:
    """A model id as the backend names it: ``anthropic.claude-x`` on Bedrock, ``claude-x`` on the direct API.

    Ids of other vendors and ARNs pass unchanged; a Bedrock id given to the
    direct API loses its region prefix, vendor and version suffix.
    """
    if model.startswith("arn:"):
        return model
    bedrock_id = _BEDROCK_ID.match(model)
    if backend == "direct":
        return bedrock_id.group("model") if bedrock_id else model
    if bedrock_id or not model.startswith("claude"):
        return model
    return _VENDOR + model


def configure(backend: str | None) -> None:
    """Set the run's backend from ``-b/--backend`` (None: ``API_BACKEND``)."""
    global _override
    _override = _checked_backend(backend) if backend else None


def _checked_backend(name: str) -> Backend:
    if name not in BACKENDS:
        raise RouteError(f"unknown API backend {name!r}: use {' or '.join(BACKENDS)}")
    return name  # type: ignore[return-value]


def current_route() -> ApiRoute:
    """The route of this run: the configured backend with the environment's credentials and endpoints."""
    backend = _override or _checked_backend(credential(API_BACKEND_ENV) or "direct")
    if backend == "direct":
        return ApiRoute("direct", credential("ANTHROPIC_BASE_URL"), secret=credential("ANTHROPIC_API_KEY"))
    region = credential("AWS_REGION") or credential("AWS_DEFAULT_REGION") or DEFAULT_BEDROCK_REGION
    return ApiRoute(
        "bedrock", credential("ANTHROPIC_BEDROCK_BASE_URL"), region, secret=credential("AWS_BEARER_TOKEN_BEDROCK")
    )


def routing_line(route: ApiRoute) -> str:
    return f"API routing: {route.describe()}"
