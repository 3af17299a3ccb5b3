"""`checker_context`: coder_eval's settings for the grading side, as far as they have a meaning here."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator

ROUTE_FIXED = "the judges call the model through the run's route (-b/--backend, API_BACKEND)"
# coder_eval's api_route keys that ask for what this project does not do, and why (an empty value asks nothing).
UNSUPPORTED_API_ROUTE_KEYS = {
    "route": f"not supported: {ROUTE_FIXED}; a task cannot pick another backend for them",
    "params": f"not supported: it configures the litellm route, which is not here ({ROUTE_FIXED})",
    "env_params": f"not supported: it configures the litellm route, which is not here ({ROUTE_FIXED})",
}


def _checked(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """The one namespace ``api_route``, holding ``model`` (a judge model id); the rest refused, naming why."""
    if value is None:
        return None
    for namespace, block in value.items():
        if namespace != "api_route":
            raise ValueError(f"unknown checker_context namespace {namespace!r}: the only one is api_route")
        if block is None:
            continue
        if not isinstance(block, dict):
            raise ValueError("api_route must be a mapping")
        for key, setting in block.items():
            if key in UNSUPPORTED_API_ROUTE_KEYS:
                if setting not in (None, {}, ""):
                    raise ValueError(f"api_route.{key}: {UNSUPPORTED_API_ROUTE_KEYS[key]}")
            elif key != "model":
                raise ValueError(f"unknown api_route field {key!r}: the one supported is model")
            elif setting is not None and (not isinstance(setting, str) or not setting):
                raise ValueError("api_route.model must be a model id (a non-empty string)")
    return value


CheckerContext = Annotated[dict[str, Any] | None, AfterValidator(_checked)]


def judge_model(context: dict[str, Any] | None) -> str | None:
    """``checker_context.api_route.model``: the model of every llm_judge that names none (None: unset)."""
    route = (context or {}).get("api_route") or {}
    model = route.get("model")
    return model if isinstance(model, str) else None
