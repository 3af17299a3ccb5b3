"""Starting an agent CLI (Claude Code for the claude-code agent and the agent judge, Codex) with only what it needs.

The agent SDKs copy the caller's whole environment into the CLI they start
and can add variables but never remove them. The CLI is therefore started
through a two-line wrapper that ``exec``s it under ``env -i`` with an
allow-list of variable names (values are never written to disk), with a
fresh HOME of its own, and with a model proxy grant in place of any key.
"""

from __future__ import annotations

import asyncio
import fcntl
import gc
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from . import stdio_relay
from .routing import RouteError
from .trees import remove_tree

if TYPE_CHECKING:
    from .routing import ApiRoute

T = TypeVar("T")

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


AGENT_HOMES = "/tmp"
LAUNCH_FOLDER = "launch"


PROXIES = frozenset(name for name in PASSED_THROUGH if "proxy" in name.lower())


def passed_through(names: tuple[str, ...]) -> dict[str, str]:
    return {name: os.environ[name] for name in names if name in os.environ}


OWNER_LOCK = "owner.lock"  # beside home/ and launch/, locked while its process lives
LEFT_AFTER_S = 10.0  # a home this old whose lock nobody holds was left by a killed process


@contextmanager
def agent_home(prefix: str) -> Iterator[Path]:
    """A fresh HOME (with its TMPDIR) for one agent run, removed afterwards; under /tmp, where a confined
    sandbox shows it at the same path (in its private /tmp). It is ``home`` in a private folder (``mkdtemp``:
    0700, a name nobody could have made first) beside ``launch`` (``launchers``), which the sandbox never sees.
    The folder's lock is held while it is in use: a harness killed with ``kill -9`` never removes its homes,
    so each new one first removes those of its kind that nobody holds."""
    remove_left_homes(prefix)
    root = Path(tempfile.mkdtemp(prefix=prefix, dir=AGENT_HOMES))
    lock = os.open(root / OWNER_LOCK, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        home = root / "home"
        (home / "tmp").mkdir(parents=True)
        (root / LAUNCH_FOLDER).mkdir(mode=0o700)
        yield home
    finally:
        remove_tree(root, ignore_errors=True)
        os.close(lock)  # after the removal: a sweep never takes a home still being removed


def remove_left_homes(prefix: str) -> None:
    """The homes of ``prefix`` a killed process left: ours, older than LEFT_AFTER_S (a new one takes its lock
    within that), and no process holding their lock (the kernel lets go of it when its holder dies)."""
    for root in Path(AGENT_HOMES).glob(f"{prefix}*"):
        if _left_behind(root):
            remove_tree(root, ignore_errors=True)


def _left_behind(root: Path) -> bool:
    try:
        found = root.lstat()
        if (
            not stat.S_ISDIR(found.st_mode)
            or found.st_uid != os.getuid()
            or time.time() - found.st_mtime < LEFT_AFTER_S
        ):
            return False
        lock = os.open(root / OWNER_LOCK, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # gone, not ours to read, or made by a build that took no lock
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # its process lives
    finally:
        os.close(lock)
    return True


def launchers(home: Path) -> Path:
    """Where the scripts this machine runs to start an agent CLI live: beside its HOME (``agent_home``), never
    in it. The agent writes to its HOME, and a script there would be the agent's to rewrite before the
    harness's next start of it (a dialog's next exchange) ran it on this machine, outside every confinement."""
    return home.parent / LAUNCH_FOLDER


def bypass_proxies(env: dict[str, str], base_url: str | None) -> None:
    """The model proxy (the grant's base URL) is reached directly, never through the caller's HTTP(S)_PROXY."""
    host = urlsplit(base_url).hostname if base_url else None
    if host is None:
        return
    for name in ("NO_PROXY", "no_proxy"):
        listed = [entry for entry in env.get(name, "").split(",") if entry]
        env[name] = ",".join(listed if host in listed else [*listed, host])


# What a sandbox's environment() sets for its commands (tempdir.py, docker.py): the agent's tool calls work in
# the same sandbox (an `npm install -g` into its `.npm-prefix`, the venv, the container's CA bundle and uv cache).
SANDBOX_SETTINGS = (
    "GIT_CEILING_DIRECTORIES",
    "PYTHONDONTWRITEBYTECODE",
    "VIRTUAL_ENV",
    "NODE_PATH",
    "NPM_CONFIG_PREFIX",
    "UV_CACHE_DIR",
    "SSL_CERT_FILE",
    "PIP_CERT",
)


def base_environment(sandbox_env: dict[str, str], home: Path, names: tuple[str, ...]) -> dict[str, str]:
    """What every agent CLI gets: its own HOME and TMPDIR, the sandbox's PATH and own settings, the named
    pass-throughs; nothing else of the caller's environment."""
    env = {name: sandbox_env[name] for name in SANDBOX_SETTINGS if name in sandbox_env}
    env |= {"HOME": str(home), "TMPDIR": str(home / "tmp"), "PATH": sandbox_env.get("PATH", os.defpath)}
    env.update(passed_through(names))
    # a confined sandbox's egress proxy wins over the caller's: the CLI's tools reach the network through it
    env.update({name: sandbox_env[name] for name in PROXIES if name in names and name in sandbox_env})
    return env


def write_wrapper(home: Path, cli: str, names: list[str], launcher: list[str]) -> Path:
    """A launcher that drops every variable but the named ones, then starts the CLI through ``launcher`` (into
    the evaluation's process namespace), its stdin and stdout relayed through sockets (``stdio_relay``: what the
    harness reads of the CLI, the CLI's own tools cannot write)."""
    keep = " ".join(f'${{{name}+"{name}=${name}"}}' for name in sorted(set(names)))
    relay = shlex.join([sys.executable, "-I", stdio_relay.__file__, *launcher])
    wrapper = launchers(home) / Path(cli).name
    script = f'#!/bin/sh\nexec {relay} env -i {keep} "{cli}" "$@"\n'
    # Written by a child process, never through a descriptor of this one: a command another evaluation's thread
    # forks meanwhile would hold that descriptor until its exec, and starting the launcher then fails with
    # "Text file busy" (ETXTBSY; an evaluation in six at -j 6 was an ERROR).
    subprocess.run(
        ["/bin/sh", "-c", 'umask 077 && cat > "$1" && chmod 700 "$1"', "sh", str(wrapper)],
        input=script.encode(),
        check=True,
        timeout=30,
    )
    return wrapper


SDK_VARIABLES = (
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_AGENT_SDK_VERSION",
    "CLAUDE_AGENT_SDK_CLIENT_APP",
    "CLAUDE_AGENT_SDK_DERIVED_CLIENT_APP",
    "CLAUDE_CODE_SDK_READS_SESSION_STATE",
    "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING",
)  # not PWD: the SDK sets this machine's path of the folder, which a confined CLI sees elsewhere
# Retry tuning, passed like the locale and proxies (the credentials and endpoints come from the route).
PASS_THROUGH = (*PASSED_THROUGH, "CLAUDE_CODE_MAX_RETRIES", "API_TIMEOUT_MS")


def bundled_cli() -> str:
    import claude_agent_sdk

    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    found = str(bundled) if bundled.exists() else shutil.which("claude")
    if not found:
        raise RouteError("no Claude Code CLI: the claude-agent-sdk wheel ships none and none is on PATH")
    return found


def cli_environment(sandbox_env: dict[str, str], home: Path, route: ApiRoute) -> dict[str, str]:
    """The Claude Code CLI's whole environment: isolated home, no non-essential traffic, the route's variables."""
    env = base_environment(sandbox_env, home, PASS_THROUGH)
    env.update(
        {
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
    )
    env["IS_SANDBOX"] = "1"  # it runs as root of its namespace, and refuses bypassPermissions as root otherwise
    env.update(route.cli_environment())
    bypass_proxies(env, route.base_url)
    return env


async def within(conversation: Awaitable[T], seconds: float | None) -> T:
    """``asyncio.wait_for``; on a timeout, what the cancelled SDK client left (its CLI's subprocess transport, in a
    reference cycle) is collected while the event loop is still open. Collected after ``asyncio.run`` closed it,
    each transport printed "Exception ignored ... Event loop is closed" with a traceback on the user's terminal."""
    try:
        return await asyncio.wait_for(conversation, seconds)
    except TimeoutError:
        gc.collect()
        await asyncio.sleep(0)  # their close callbacks run now
        raise
