"""API routing: which backend every model call of a run goes through (direct Anthropic API or AWS Bedrock).

A run resolves its route once (:func:`resolve_route`, from ``-b/--backend`` or
``API_BACKEND``, the run's credentials and the endpoints in the environment)
into its run context; the claude-code agent, the judges and the simulated
user all take it from there. A route carries its credential in memory only
(``describe`` and ``repr`` show none).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from .model_proxy import BEDROCK_API, MESSAGES_API, Grant, Upstream

if TYPE_CHECKING:
    from .credentials import Credentials

Backend = Literal["direct", "bedrock"]
BACKENDS: tuple[Backend, ...] = ("direct", "bedrock")
API_BACKEND_ENV = "API_BACKEND"
DEFAULT_BEDROCK_REGION = "us-east-1"
DIRECT_API_URL = "https://api.anthropic.com"
BEDROCK_RUNTIME_URL = "https://bedrock-runtime.{region}.amazonaws.com"
BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"
_VENDOR = "anthropic."
# A Bedrock id: optional cross-region prefix (us./eu./apac./global.), the vendor, the model, optional -vN:M.
_BEDROCK_ID = re.compile(r"^(?:(?:us|eu|apac|global)\.)?anthropic\.(?P<model>.+?)(?:-v\d+(?::\d+)?)?$")
# A region's cross-region inference profile, by the region's prefix (coder_eval's `to_bedrock_inference_profile`).
_REGION_PROFILES = (("eu-", "eu."), ("us-", "us."), ("ap-", "apac."))
_PROFILE_PREFIX = re.compile(r"^(?:us|eu|apac|global)\.(?=anthropic\.)")


class RouteError(ValueError):
    """The model route is not usable (unknown backend, missing credentials)."""


@dataclass(frozen=True)
class ApiRoute:
    backend: Backend
    base_url: str | None = None
    region: str | None = None
    secret: str | None = field(default=None, repr=False)  # ANTHROPIC_API_KEY or AWS_BEARER_TOKEN_BEDROCK
    small_model: str | None = None  # Bedrock: BEDROCK_SMALL_MODEL, else BEDROCK_MODEL: the CLI's small, fast model

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
        """``model`` as this route's requests name it (on Bedrock, its region's inference profile)."""
        return translate_model(model, self.backend, self.region)

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
        env["CLAUDE_CODE_ATTRIBUTION_HEADER"] = "0"  # Bedrock refuses the CLI's billing header (400), as coder_eval
        if self.base_url:
            env["ANTHROPIC_BEDROCK_BASE_URL"] = self.base_url
        if self.small_model:
            env["ANTHROPIC_SMALL_FAST_MODEL"] = self.small_model
        return env

    def upstream(self) -> Upstream:
        """Where the model proxy sends an agent CLI's requests on this route, with the real credential."""
        if self.secret is None:
            raise RouteError(f"API_BACKEND={self.backend} needs {self.credential_name}")
        if self.backend == "direct":
            return Upstream(self.base_url or DIRECT_API_URL, "x-api-key", self.secret, MESSAGES_API)
        bedrock = self.base_url or BEDROCK_RUNTIME_URL.format(region=self.region)
        return Upstream(bedrock, "authorization", f"Bearer {self.secret}", BEDROCK_API)

    def through(self, grant: Grant) -> ApiRoute:
        """This route as an agent CLI sees it: the proxy's URL, and the grant's token in place of the credential."""
        return replace(self, base_url=grant.base_url, secret=grant.token)

    def new_client(self, max_retries: int, timeout: float) -> Any:
        """An anthropic SDK client on this route (the run context keeps one per setting and shares it)."""
        import anthropic

        if self.backend == "direct":
            return anthropic.Anthropic(
                api_key=self.secret, base_url=self.base_url, max_retries=max_retries, timeout=timeout
            )
        return anthropic.AnthropicBedrock(
            api_key=self.secret,
            aws_region=self.region,
            base_url=self.base_url,
            max_retries=max_retries,
            timeout=timeout,
        )


def translate_model(model: str, backend: Backend, region: str | None = None) -> str:
    """A model id as the backend names it: ``anthropic.claude-x`` on Bedrock (``eu.anthropic.claude-x`` given the
    region ``eu-north-1``), ``claude-x`` on the direct API.

    Ids of other vendors and ARNs pass unchanged; a Bedrock id given to the
    direct API loses its region prefix, vendor and version suffix.
    """
    if model.startswith("arn:"):
        return model
    bedrock_id = _BEDROCK_ID.match(model)
    if backend == "direct":
        return bedrock_id.group("model") if bedrock_id else model
    if not bedrock_id and not model.startswith("claude"):
        return model
    qualified = model if bedrock_id else _VENDOR + model
    return inference_profile(qualified, region) if region else qualified


def without_profile(model_id: str) -> str:
    """A Bedrock id without its cross-region profile (``us.anthropic.x`` is ``anthropic.x``): the name a price
    file or a price list gives the model, which the region's requests qualify."""
    return _PROFILE_PREFIX.sub("", model_id)


def inference_profile(model_id: str, region: str) -> str:
    """A Bedrock ``anthropic.`` id as its region's cross-region inference profile (``eu.``, ``us.``, ``apac.``), as
    coder_eval qualifies it: Bedrock serves the newer Claude models on demand only through one. An id naming its
    profile already (``global.anthropic...``), and a region outside those three, are kept."""
    if not model_id.startswith(_VENDOR):
        return model_id
    for area, prefix in _REGION_PROFILES:
        if region.lower().startswith(area):
            return prefix + model_id
    return model_id


def checked_backend(name: str) -> Backend:
    if name not in BACKENDS:
        raise RouteError(f"unknown API backend {name!r}: use {' or '.join(BACKENDS)}")
    return name


def resolve_route(backend: str | None, credentials: Credentials, environ: Mapping[str, str]) -> ApiRoute:
    """The route of a run: ``backend`` (``-b``), else ``API_BACKEND``, else direct; its credential and endpoints.

    Endpoints and the region are plain settings, read from ``environ``; the
    credential comes from the run's credentials (never from the environment:
    the CLI hands its credentials over out of it).
    """

    def setting(name: str) -> str | None:
        return environ.get(name) or None

    chosen = checked_backend(backend or setting(API_BACKEND_ENV) or "direct")
    if chosen == "direct":
        return ApiRoute("direct", setting("ANTHROPIC_BASE_URL"), secret=credentials.get("ANTHROPIC_API_KEY"))
    region = setting("AWS_REGION") or setting("AWS_DEFAULT_REGION") or DEFAULT_BEDROCK_REGION
    small_model = setting("BEDROCK_SMALL_MODEL") or setting("BEDROCK_MODEL")  # as coder_eval's .env names them
    return ApiRoute(
        "bedrock",
        setting("ANTHROPIC_BEDROCK_BASE_URL"),
        region,
        secret=credentials.get("AWS_BEARER_TOKEN_BEDROCK"),
        small_model=translate_model(small_model, "bedrock", region) if small_model else None,
    )


def routing_line(route: ApiRoute) -> str:
    return f"API routing: {route.describe()}"
