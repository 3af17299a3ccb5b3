"""Start an agent CLI with only the environment it needs.

The agent SDKs copy the caller's whole environment into the CLI they start
and can add variables but never remove them. The CLI is therefore started
through a two-line wrapper that ``exec``s it under ``env -i`` with an
allow-list of variable names (values are never written to disk).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# Passed to an agent when the caller sets them: the locale, and the proxy of
# the caller's network (a gateway to the model API goes through it too).
PASSED_THROUGH = (
    "LANG",
    "LC_ALL",
    "TZ",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
)


def passed_through(names: tuple[str, ...]) -> dict[str, str]:
    return {name: os.environ[name] for name in names if name in os.environ}


def write_wrapper(home: Path, cli: str, names: list[str]) -> Path:
    """A launcher that drops every variable but the named ones, then execs the CLI."""
    keep = " ".join(f'${{{name}+"{name}=${name}"}}' for name in sorted(set(names)))
    wrapper = home / Path(cli).name
    wrapper.write_text(f'#!/bin/sh\nexec env -i {keep} "{cli}" "$@"\n', encoding="utf-8")
    wrapper.chmod(stat.S_IRWXU)
    return wrapper
