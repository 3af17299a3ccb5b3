"""Keep credentials out of sandboxes, reports, tables and logs."""

from __future__ import annotations

import base64
import os

from . import credentials
from .credentials import is_secret_name

# Variables a sandboxed command never sees: the harness's credentials and its model-route settings.
_MODEL_ROUTE_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "AWS_")
MIN_SECRET_LENGTH = 8
REDACTED = "***"


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """The credential values to redact: the handed-over ones and any secret-named variable's."""
    env = os.environ if environ is None else environ
    found = [v for k, v in env.items() if is_secret_name(k)] + (credentials.values() if environ is None else [])
    values = {v for v in found if len(v) >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def _forms(value: str) -> list[str]:
    """A value as written, reversed, and base64-encoded (as ``echo $X | base64`` prints it too)."""
    encoded = [base64.b64encode(raw.encode()).decode().rstrip("=") for raw in (value, value + "\n")]
    return [value, value[::-1], *encoded]


def redact(text: str, values: list[str] | None = None) -> str:
    """Replace every known secret value in ``text``, in the forms a leak most often takes."""
    for value in secret_values() if values is None else values:
        for form in _forms(value):
            if form in text:
                text = text.replace(form, REDACTED)
    return text


def sandbox_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment minus credentials and model-route settings."""
    env = {k: v for k, v in os.environ.items() if not is_secret_name(k) and not k.startswith(_MODEL_ROUTE_PREFIXES)}
    env.update(extra or {})
    return env
