"""The `opencode` agent: the opencode CLI (npm `opencode-ai`, pinned), one `opencode run --format json` per exchange.

Installed ahead, never at run time: `coder-eval agents install opencode`
(:func:`install`) puts the pinned `opencode-ai` (with its platform binary,
which bundles the provider packages) and the `@opencode-ai/plugin` package it
wants in its config folder (it would fetch it at every start otherwise) from
the npm registry, and ripgrep (its grep and glob tools; it would download it
from GitHub otherwise) from PyPI, under one folder (:class:`Installation`).

Route: ``agent.model`` is opencode's ``provider/model``. ``custom/<id>`` is an
OpenAI-compatible provider at OPENCODE_BASE_URL keyed by OPENCODE_API_KEY
(vLLM, LiteLLM, any local server); the providers of ``PROVIDERS`` take their
usual ``<NAME>_API_KEY`` (and ``<NAME>_BASE_URL``, else their API). Either
way the CLI holds no key: its provider points at a model proxy grant.

Isolation: its own HOME (config, sessions, caches), our `opencode.json`
(``OPENCODE_CONFIG``) with the project's config files ignored, no external
plugins (``--pure``), no title side call, no update, share or model-list
fetch, and the allow-listed environment of every agent CLI.

Telemetry (its JSON events): ``step_start`` opens a turn (one model round
trip), ``tool_use`` is a finished call (input, status, output, duration),
``text`` the agent's words, ``step_finish`` the turn's tokens (input without
cache reads, output with reasoning, cache read and write) and cost (a zero
cost is opencode not knowing the model's price: the price hook is asked, and
else the cost stays unknown). Tool names are recorded as the other agents
name them (``bash`` as ``Bash``...).

Limits: after each finished turn (whatever its reason) the budgets are
checked and ``max_turns`` (over the whole conversation) is applied; after each
call the early-stop watcher; any of them stops the CLI (its whole process
group is killed). So does an error event, and a turn that got no model answer
(reason ``unknown``, no tokens: opencode would ask again forever); either ends
the task as ERROR, its HTTP status in the message. The events are read
as they come, maybe late on a loaded machine, so the model proxy also asks
the session before each of the CLI's model requests (:meth:`OpencodeSession.admit`):
a stop binds at the next round trip, never a call later. ``allowed_tools`` and
``disallowed_tools`` become opencode permissions (``write`` and ``edit`` are
one permission there, ``edit``). A simulated dialog continues the session
(``--session``) with each user message, one CLI run per exchange.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import stdio_relay
from ..agent_cli import PASSED_THROUGH, agent_home, base_environment, bypass_proxies, write_wrapper
from ..limits import Breach, BudgetTracker
from ..model_proxy import MESSAGES_API, OPENAI_API, Grant, Upstream
from ..models.agent import AgentConfig
from ..models.results import ToolCallRecord, TurnRecord
from ..run_lock import exclusively
from ..secrets import redact
from .admission import ModelRequests
from .base import AgentInput, AgentOutput, recorded_output

VERSION = "1.18.33"  # opencode-ai on the npm registry
RIPGREP_VERSION = "14.1.0"  # the newest ripgrep with a Linux wheel on PyPI
INSTALL_DIR_VARIABLE = "CODER_EVAL_OPENCODE_DIR"
SHOWN_IN_HOME = "opencode-installation"  # where the CLI sees its installation: in its HOME, read-only
INSTALL_TIMEOUT_S = 900.0
CONFIG_FILE = "opencode.json"
STDERR_LINES = 20
STDERR_GRACE_S = 5.0  # how long the CLI's stderr is read after it exited
EVENT_BYTES = 1 << 24  # the longest JSON line read (a call's input or output can be long)
CUSTOM = "custom"
ANSWERED = "stop"  # the one step_finish reason after which opencode asks the model nothing more
# A step that got no model answer (an empty 200, a non-streamed or foreign JSON): opencode retries it endlessly.
NO_MODEL_REPLY = (
    "API error: the model API's reply was not a model answer (opencode's step got no tokens, reason unknown)"
)
UNPARSED_REPLY = "JSON parsing failed"  # opencode's UnknownError for a reply that is not JSON
# opencode's tool names -> the names the other agents (and the criteria) use; any other name is kept.
TOOL_NAMES = {
    "bash": "Bash",
    "read": "Read",
    "write": "Write",
    "edit": "Edit",
    "glob": "Glob",
    "grep": "Grep",
    "list": "LS",
    "webfetch": "WebFetch",
    "websearch": "WebSearch",
    "task": "Task",
    "todowrite": "TodoWrite",
    "skill": "Skill",
}
# A tool name (either spelling) -> the opencode permission that governs it, where they differ.
PERMISSIONS = {"write": "edit", "multiedit": "edit", "patch": "edit", "ls": "list"}


class OpencodeError(Exception):
    """opencode is not installed, or the task's model cannot be routed."""


# ----------------------------------------------------------------------------- installation


@dataclass(frozen=True)
class Installation:
    """Where `coder-eval agents install opencode` puts the pinned CLI and ripgrep."""

    root: Path

    @classmethod
    def located(cls) -> Installation:
        """CODER_EVAL_OPENCODE_DIR, else a folder of the user's cache named for the version."""
        chosen = os.environ.get(INSTALL_DIR_VARIABLE)
        if chosen:
            return cls(Path(chosen))
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cls(cache / "coder-eval" / f"opencode-{VERSION}")

    @property
    def cli(self) -> Path:
        return self.root / "npm" / "node_modules" / ".bin" / "opencode"

    @property
    def tools(self) -> Path:
        """The folder put first on the CLI's PATH (ripgrep)."""
        return self.root / "ripgrep" / "bin"

    @property
    def config_packages(self) -> Path:
        """The packages opencode wants in its config folder (its plugin API), installed once for every run."""
        return self.root / "config"

    def ready(self) -> bool:
        return self.cli.exists() and (self.tools / "rg").exists() and (self.config_packages / "node_modules").exists()

    def seen_from(self, home: Path) -> Installation:
        """The installation where the CLI sees it: shown read-only in its HOME (the confined sandbox it runs in
        does not show the user's cache, where it is)."""
        return Installation(home / SHOWN_IN_HOME)

    def lay_config_folder(self, home: Path) -> None:
        """HOME's opencode config folder with those packages in it (opencode would fetch them at every start)."""
        folder = home / ".config" / "opencode"
        folder.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(self.config_packages / name, folder / name)
        (folder / "node_modules").symlink_to(self.seen_from(home).config_packages / "node_modules")

    def check(self) -> None:
        if not self.ready():
            raise OpencodeError(
                f"opencode {VERSION} is not installed in {self.root}: run `coder-eval agents install opencode`"
            )


def _install_step(command: Sequence[str], what: str) -> str:
    """One install command, its whole process group killed at the timeout; its stdout, or an error naming it."""
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        out, err = process.communicate(timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise OpencodeError(f"{what} did not finish within {INSTALL_TIMEOUT_S:g} s") from None
    if process.returncode != 0:
        said = (err or out).decode(errors="replace").strip()[-800:]
        raise OpencodeError(f"{what} failed (exit {process.returncode}): {said}")
    return out.decode(errors="replace").strip()


def install() -> str:
    """Install the pinned opencode (npm registry) and ripgrep (PyPI) into :meth:`Installation.located`, once.

    Concurrent installs (two commands, or test workers, on a new machine) wait
    for each other on a lock file beside the folder: two npm installs into one
    prefix fail each other (ENOTEMPTY), and the second finds the first's work.
    """
    where = Installation.located()
    where.root.parent.mkdir(parents=True, exist_ok=True)
    with exclusively(where.root.parent / f"{where.root.name}.lock"):
        if where.ready():
            return f"opencode {VERSION} is already installed in {where.root}"
        return _install_into(where)


def _install_into(where: Installation) -> str:
    from ..sandbox.tempdir import uv_binary

    npm, uv = shutil.which("npm"), uv_binary()
    if npm is None or uv is None:
        raise OpencodeError("installing opencode needs npm (Node.js 20 or later) and uv on PATH")
    for folder, package in (("npm", "opencode-ai"), ("config", "@opencode-ai/plugin")):
        prefix = str(where.root / folder)
        _install_step([npm, "install", "--prefix", prefix, "--no-audit", "--no-fund", f"{package}@{VERSION}"], package)
    target = str(where.root / "ripgrep")
    _install_step([uv, "pip", "install", "--quiet", "--target", target, f"ripgrep=={RIPGREP_VERSION}"], "ripgrep")
    where.check()
    with agent_home("coder-eval-opencode-") as home:  # its first start writes into HOME
        said = _install_step(["env", "-i", f"HOME={home}", str(where.cli), "--version"], "opencode --version")
    if said != VERSION:
        raise OpencodeError(f"{where.cli} says it is version {said!r}, not {VERSION}")
    return f"opencode {VERSION} and ripgrep {RIPGREP_VERSION} installed in {where.root}"


# ----------------------------------------------------------------------------- route and configuration


@dataclass(frozen=True)
class Provider:
    """A built-in opencode provider coder-eval routes: its API (``root`` + ``path``), its key's header, and the
    model calls the proxy forwards to it."""

    root: str  # replaced by <NAME>_BASE_URL when set
    path: str = ""
    header: str = "authorization"
    calls: tuple[str, ...] = OPENAI_API


PROVIDERS = {
    "anthropic": Provider("https://api.anthropic.com", "/v1", "x-api-key", MESSAGES_API),
    "openai": Provider("https://api.openai.com/v1"),
    "openrouter": Provider("https://openrouter.ai/api/v1"),
    "deepseek": Provider("https://api.deepseek.com"),
    "groq": Provider("https://api.groq.com/openai/v1"),
    "mistral": Provider("https://api.mistral.ai/v1"),
    "xai": Provider("https://api.x.ai/v1"),
}


def split_model(config: AgentConfig) -> tuple[str, str]:
    """``agent.model`` as (provider, model id): its form was checked when the task loaded (AgentConfig)."""
    provider, _, model = str(config.model).partition("/")
    return provider, model


def upstream(agent_input: AgentInput, provider: str) -> Upstream:
    """Where the provider's requests go, with its real key: the model proxy's side."""
    credentials = agent_input.run.credentials
    if provider == CUSTOM:
        base, key = os.environ.get("OPENCODE_BASE_URL"), credentials.get("OPENCODE_API_KEY")
        if not base or not key:
            raise OpencodeError(f"model {CUSTOM}/... needs OPENCODE_BASE_URL and OPENCODE_API_KEY")
        return Upstream(base, "authorization", f"Bearer {key}", OPENAI_API)
    known = PROVIDERS.get(provider)
    if known is None:
        routed = ", ".join([CUSTOM, *PROVIDERS])
        raise OpencodeError(f"opencode provider {provider!r} is not routed by coder-eval; use one of {routed}")
    name = provider.upper()
    key = credentials.get(f"{name}_API_KEY")
    if not key:
        raise OpencodeError(f"model {provider}/... needs {name}_API_KEY")
    base = (os.environ.get(f"{name}_BASE_URL") or known.root).rstrip("/") + known.path
    return Upstream(base, known.header, key if known.header == "x-api-key" else f"Bearer {key}", known.calls)


def permissions(config: AgentConfig) -> dict[str, str]:
    """allowed_tools and disallowed_tools as opencode permissions (the last matching rule wins)."""

    def permission(tool: str) -> str:
        name = tool.lower()
        return PERMISSIONS.get(name, name)

    rules: dict[str, str] = {}
    if config.allowed_tools is not None:
        rules["*"] = "deny"
        rules.update({permission(tool): "allow" for tool in config.allowed_tools})
    rules.update({permission(tool): "deny" for tool in config.disallowed_tools})
    return rules


def write_config(home: Path, config: AgentConfig, provider: str, model: str, grant: Grant) -> None:
    """Our opencode.json: the provider at the grant, no title side call, the permissions, no update or share."""
    entry: dict[str, Any] = {"options": {"baseURL": grant.base_url, "apiKey": grant.token}}
    if provider == CUSTOM:
        entry |= {"npm": "@ai-sdk/openai-compatible", "name": CUSTOM, "models": {model: {"name": model}}}
    settings: dict[str, Any] = {
        "autoupdate": False,
        "share": "disabled",
        "provider": {provider: entry},
        "agent": {"title": {"disable": True}},
    }
    rules = permissions(config)
    if rules:
        settings["permission"] = rules
    (home / CONFIG_FILE).write_text(json.dumps(settings, indent=2), encoding="utf-8")


def environment(agent_input: AgentInput, home: Path, installation: Installation, grant: Grant) -> dict[str, str]:
    """The CLI's environment: its home and config, ripgrep first on PATH, no fetch of anything."""
    env = base_environment(agent_input.sandbox.environment(), home, PASSED_THROUGH)
    env["PATH"] = f"{installation.seen_from(home).tools}{os.pathsep}{env['PATH']}"
    env.update(
        {
            "OPENCODE_CONFIG": str(home / CONFIG_FILE),
            "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_SHARE": "1",
        }
    )
    bypass_proxies(env, grant.base_url)
    return env


def arguments(agent_input: AgentInput, session_id: str | None) -> list[str]:
    """`opencode run`'s arguments (the prompt goes to its stdin: no length limit, no option parsing)."""
    args = ["run", "--pure", "--format", "json", "--model", str(agent_input.config.model)]
    mode = agent_input.config.permission_mode
    if mode == "plan":
        args += ["--agent", "plan"]
    elif mode == "bypassPermissions":
        args.append("--auto")  # what it would ask is allowed (a run cannot ask: an ask is a refusal there)
    if agent_input.config.variant:
        args += ["--variant", agent_input.config.variant]
    if session_id:
        args += ["--session", session_id]
    return args


# ----------------------------------------------------------------------------- telemetry


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


class OpencodeSession:
    """The telemetry and limits of one opencode conversation (one or more CLI runs on one session)."""

    def __init__(self, agent_input: AgentInput):
        self.input = agent_input
        self.output = AgentOutput()
        self.budget = BudgetTracker(agent_input.limits)
        self.session_id: str | None = None
        self.stop_reason: str | None = None  # the early-stop watcher's
        self.breach: Breach | None = None
        self.error: str | None = None  # an error event's
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self.cut_off = False  # its CLI was stopped (a limit, a timeout, an interrupt)
        self.requests = ModelRequests(lambda: self.stopping or self.cut_off)  # the model proxy asks it first

    @property
    def stopping(self) -> bool:
        """A limit, the watcher or an error ends the CLI run (an error ends the task: nothing after it counts)."""
        limited = self.output.stop_reason in ("max_turns", "max_tool_calls")
        return bool(self.stop_reason or self.breach or limited or self.error)

    def on_line(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:  # not an event (a warning on stdout)
            return
        if isinstance(event, dict):
            with self.requests.reporting():
                self.on_event(event)

    def on_event(self, event: dict[str, Any]) -> None:
        self.session_id = self.session_id or event.get("sessionID")
        kind, part = event.get("type"), event.get("part") or {}
        if kind == "step_start":  # stamped as it arrives: when the round trip began, the previous one ended
            self.output.open_turn(TurnRecord(index=len(self.output.turns) + 1))
        elif kind == "tool_use":
            self._call(part)
        elif kind == "text" and str(part.get("text") or "").strip():
            turn = self._turn()
            turn.text = (turn.text + "\n" if turn.text else "") + str(part["text"])
        elif kind == "step_finish":
            self._finish_turn(part)
        elif kind == "error":
            self.error = self._error_text(event.get("error"))

    def _turn(self) -> TurnRecord:
        if not self.output.turns:
            self.output.open_turn(TurnRecord(index=1))
        return self.output.turns[-1]

    def _call(self, part: dict[str, Any]) -> None:
        state = part.get("state") or {}
        tool = str(part.get("tool") or "?")
        parameters = dict(state.get("input") or {})
        if tool == "skill" and "name" in parameters:
            parameters.setdefault("skill", parameters["name"])  # the key the Skill criteria read
        ok = state.get("status") == "completed"
        said = state.get("output") if ok else state.get("error")
        times = state.get("time") or {}
        turn = self._turn()
        started = _number(times.get("start"))  # epoch milliseconds
        call = ToolCallRecord(
            started_at=started / 1000 if started > 0 else None,
            turn=turn.index,
            seq=len(turn.calls) + 1,
            tool=TOOL_NAMES.get(tool, tool),
            parameters=parameters,
            status="success" if ok else "error",
            duration_ms=round(max(0.0, _number(times.get("end")) - _number(times.get("start"))), 1),
            output=recorded_output(str(said)) if said else None,
        )
        turn.calls.append(call)
        watcher = self.input.watcher
        reason = watcher.observe(call) if watcher else None
        self.stop_reason = self.stop_reason or reason
        # opencode reports a call once it ran, so none can be refused: at the cap, no model request follows (the
        # call past it is never asked for) and the CLI is stopped
        if self.input.calls_exhausted(sum(len(t.calls) for t in self.output.turns)):
            self.output.stop_at_tool_cap(self.input.limits.max_tool_calls)

    def _finish_turn(self, part: dict[str, Any]) -> None:
        """A model round trip's usage and cost; then the budgets and max_turns."""
        turn, tokens = self._turn(), part.get("tokens") or {}
        self.requests.reported += 1
        cache = tokens.get("cache") or {}
        turn.input_tokens = int(_number(tokens.get("input")))
        turn.output_tokens = int(_number(tokens.get("output")) + _number(tokens.get("reasoning")))
        turn.cache_read_input_tokens = int(_number(cache.get("read")))
        turn.cache_creation_input_tokens = int(_number(cache.get("write")))
        cost = _number(part.get("cost"))  # opencode prices its catalog's models; 0 means it has no price
        if cost > 0:
            turn.cost_usd, turn.cost_source = cost, "reported"
        self.input.price(turn)
        self.breach = self.breach or self.budget.add(turn)
        reason = part.get("reason")
        if reason == "unknown" and not turn.spent:
            self.error = NO_MODEL_REPLY  # opencode would ask again, endlessly
        max_turns = self.input.limits.max_turns
        if max_turns is not None and self.output.exchange_turns >= max_turns and reason != ANSWERED:
            self.output.stop_reason = "max_turns"  # another round trip would follow

    @staticmethod
    def _error_text(error: Any) -> str:
        """An error event as ``name status: message``: the HTTP status names its category (auth, rate limit...);
        a reply that failed to parse is said to be the API's."""
        if not isinstance(error, dict):
            return redact(str(error))
        data = error.get("data")
        data = data if isinstance(data, dict) else {}
        status = data.get("statusCode")
        name = f"{error.get('name', 'error')}{f' {status}' if isinstance(status, int) else ''}"
        said = f"{name}: {data.get('message') or error}"
        if UNPARSED_REPLY in said:
            said = f"API error: the model's reply could not be parsed ({said})"
        return redact(said)

    def failure(self, code: int) -> str:
        """Why a CLI run failed: its error event, else its exit code and last words on stderr."""
        said = "; ".join(line for line in self.stderr if line)
        return self.error or redact(f"opencode exited with code {code}" + (f" (stderr: {said})" if said else ""))

    def finish(self) -> AgentOutput:
        self.output.uncosted_are_unknown()
        return self.output.conclude(self.budget, self.breach, self.stop_reason, self.input.limits.max_turns)


# ----------------------------------------------------------------------------- the CLI runs


async def _keep_tail(stream: asyncio.StreamReader, lines: deque[str]) -> None:
    """The CLI's stderr is kept, not printed (its last lines explain a failure)."""
    async for line in stream:
        lines.append(line.decode(errors="replace").rstrip())


async def _exchange(
    agent_input: AgentInput, session: OpencodeSession, wrapper: Path, env: dict[str, str], prompt: str
) -> None:
    """One CLI run: the message on its stdin, its events read as they come; stopped (its process group killed)
    as soon as a limit or the watcher says so."""
    process = await asyncio.create_subprocess_exec(
        str(wrapper),
        *arguments(agent_input, session.session_id),
        cwd=agent_input.sandbox.root,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        limit=EVENT_BYTES,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    stderr = asyncio.create_task(_keep_tail(process.stderr, session.stderr))
    answered = False  # the CLI said all it had to (its stdout ended): the exchange is over, not cut short
    try:
        with contextlib.suppress(ConnectionError):  # it ended at once: its exit code and stderr say why
            process.stdin.write(prompt.encode())
            await process.stdin.drain()
            process.stdin.close()
        async for line in process.stdout:
            session.on_line(line)
            if session.stopping:
                break
        else:
            answered = True
    finally:
        if process.returncode is None:
            session.cut_off = session.cut_off or not answered  # no request of a stopped CLI is let through
            await _stop(process)
        code = await process.wait()
        with contextlib.suppress(TimeoutError):  # a process it left behind may hold the pipe: not waited for
            await asyncio.wait_for(stderr, STDERR_GRACE_S)
    if session.error or (code != 0 and not session.stopping):
        raise RuntimeError(session.failure(code))


async def _stop(process: asyncio.subprocess.Process) -> None:
    """SIGTERM to the relay, which passes it to the CLI's group and kills that group if it does not end
    (``stdio_relay``): a SIGKILL would end the relay alone, and the CLI would run on, its late tool calls landing in
    the sandbox after the limit that stopped it. The relay's own SIGKILL if it does not end either."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signum)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), stdio_relay.KILL_AFTER_S + 1)
            return


async def _converse(
    agent_input: AgentInput, session: OpencodeSession, home: Path, installation: Installation, grant: Grant
) -> None:
    """The exchanges of one session: the prompt, then each user message of a dialog, until it ends."""
    env = environment(agent_input, home, installation, grant)
    sandbox = agent_input.sandbox
    seen = installation.seen_from(home)
    launcher = sandbox.agent_launcher(home, {installation.root: seen.root})
    wrapper = write_wrapper(home, sandbox.agent_command(home, str(seen.cli)), list(env), launcher)
    await agent_input.converse(
        lambda prompt: _exchange(agent_input, session, wrapper, env, prompt), lambda _: session.stopping, session.output
    )


async def run(agent_input: AgentInput) -> AgentOutput:
    session = OpencodeSession(agent_input)
    with agent_home("coder-eval-opencode-") as home:
        try:
            if agent_input.sandbox.config.driver != "tempdir":
                raise OpencodeError("the opencode agent runs under the tempdir driver only (not mounted in containers)")
            installation = Installation.located()
            installation.check()
            provider, model = split_model(agent_input.config)
            host = agent_input.sandbox.model_proxy_host()
            with agent_input.run.grant(upstream(agent_input, provider), host, session.requests.admit) as grant:
                installation.lay_config_folder(home)
                write_config(home, agent_input.config, provider, model, grant)
                conversation = _converse(agent_input, session, home, installation, grant)
                await asyncio.wait_for(conversation, timeout=agent_input.conversation_limit())
            return session.finish()
        except TimeoutError:
            return session.finish().timed_out(agent_input.expired_limit())
        except Exception as exc:  # an install, route, CLI or API failure ends this task as ERROR, never the run
            output = session.finish()
            output.stop_reason = "error"
            known = isinstance(exc, (OpencodeError, RuntimeError))
            output.error = redact(str(exc) if known else f"{type(exc).__name__}: {exc}")
            return output
