"""Start an agent CLI with only the environment it needs.

The agent SDKs copy the caller's whole environment into the CLI they start
and can add variables but never remove them. The CLI is therefore started
through a two-line wrapper that ``exec``s it under ``env -i`` with an
allow-list of variable names (values are never written to disk).
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

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


@contextmanager
def agent_home(prefix: str) -> Iterator[Path]:
    """A fresh HOME (with its TMPDIR) for one agent run, removed afterwards."""
    home = Path(tempfile.mkdtemp(prefix=prefix))
    (home / "tmp").mkdir()
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def bypass_proxies(env: dict[str, str], base_url: str | None) -> None:
    """The model proxy (the grant's base URL) is reached directly, never through the caller's HTTP(S)_PROXY."""
    host = urlsplit(base_url).hostname if base_url else None
    if host is None:
        return
    for name in ("NO_PROXY", "no_proxy"):
        listed = [entry for entry in env.get(name, "").split(",") if entry]
        env[name] = ",".join(listed if host in listed else [*listed, host])


def base_environment(sandbox_env: dict[str, str], home: Path, names: tuple[str, ...]) -> dict[str, str]:
    """What every agent CLI gets: its own HOME and TMPDIR, the sandbox's PATH and venv, the named pass-throughs."""
    env = {
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "PATH": sandbox_env.get("PATH", os.defpath),
        "GIT_CEILING_DIRECTORIES": sandbox_env["GIT_CEILING_DIRECTORIES"],
    }
    if "VIRTUAL_ENV" in sandbox_env:
        env["VIRTUAL_ENV"] = sandbox_env["VIRTUAL_ENV"]
    env.update(passed_through(names))
    return env


def write_wrapper(home: Path, cli: str, names: list[str], launcher: list[str]) -> Path:
    """A launcher that drops every variable but the named ones, then execs the CLI through ``launcher``
    (into the evaluation's process namespace)."""
    keep = " ".join(f'${{{name}+"{name}=${name}"}}' for name in sorted(set(names)))
    wrapper = home / Path(cli).name
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.join(launcher)} env -i {keep} "{cli}" "$@"\n', encoding="utf-8")
    wrapper.chmod(stat.S_IRWXU)
    return wrapper
