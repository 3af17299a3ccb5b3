"""Keep credentials out of sandboxes, reports, tables and logs."""

from __future__ import annotations

import os
import re

# Variables a sandboxed command never sees: the harness's own credentials.
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
_MODEL_ROUTE_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "AWS_")
MIN_SECRET_LENGTH = 8
REDACTED = "***"


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if is_secret_name(k) and len(v) >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def redact(text: str, values: list[str] | None = None) -> str:
    """Replace every known secret value in ``text``."""
    for value in secret_values() if values is None else values:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def sandbox_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment minus credentials and model-route settings."""
    env = {k: v for k, v in os.environ.items() if not is_secret_name(k) and not k.startswith(_MODEL_ROUTE_PREFIXES)}
    env.update(extra or {})
    return env
