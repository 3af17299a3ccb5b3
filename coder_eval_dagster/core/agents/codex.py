"""The `codex` agent (extra `codex`): the openai-codex SDK driving `codex app-server`.

Codex runs full-access inside our sandbox folder whatever ``permission_mode``
says (its own OS sandbox is redundant with ours and unusable on CI hosts;
use the docker driver as the boundary for untrusted runs). It gets its own
CODEX_HOME with a provider pointing at CODEX_BASE_URL (default OpenAI) keyed
by CODEX_API_KEY, analytics and plugins off, and, like claude-code, only the
environment it needs (see ``core/agent_cli.py``).

Telemetry mapping (the guide's Codex notes): every command execution is a
``Bash`` call (Codex reads and searches through the shell too), a file change
is an ``Edit`` call with its paths, an MCP call keeps its tool name. A turn
is one model round trip, opened by its token-usage update; Codex's fresh
prompt tokens are recorded as cache creation and its cached ones as cache
reads, so an input budget needs ``count_cache_creation: true``. Codex reports
no cost: each turn is priced at the run's prices (core/pricing.py) as its
usage arrives, so ``max_usd`` binds. The watcher observes each completed call and interrupts the turn.
A simulated dialog continues the same thread with each user message.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from ..agent_cli import PASSED_THROUGH, agent_home, base_environment, bypass_proxies, write_wrapper
from ..limits import Breach, BudgetTracker
from ..model_proxy import OPENAI_API, Grant, Upstream, named_in
from ..models.agent import AgentConfig
from ..models.results import ToolCallRecord, TurnRecord
from ..sandbox.mocks import agent_environment
from ..secrets import redact
from .admission import ModelRequests
from .base import AgentInput, AgentOutput, recorded_output

DEFAULT_BASE_URL = "https://api.openai.com/v1"
TOOL_LISTS_IGNORED = (
    "allowed_tools / disallowed_tools are not applied by the codex agent: Codex offers its own tools whatever they "
    "say (coder_eval does not enforce them either)"
)
# Codex's error kinds (its app-server's codexErrorInfo) whose names error_categories would not read as their
# cause, in words it reads. The others read as they are (serverOverloaded, rateLimitExceeded, unauthorized, the
# connection's and the stream's failures) or are the agent's own (contextWindowExceeded, sandboxError...).
CODEX_ERROR_KINDS = {
    "internalServerError": "API error, the server failed",
    "flexUnavailable": "API error, flex processing is unavailable",
    "responseTooManyFailedAttempts": "API error, too many failed attempts",
    "usageLimitExceeded": "the plan's usage limit or quota (billing)",
}

CONFIG_TOML = """\
model_provider = "coder_eval"
{model}
[model_providers.coder_eval]
name = "coder-eval"
base_url = "{base_url}"
env_key = "CODEX_API_KEY"
wire_api = "responses"
{query}

[analytics]
enabled = false

[features]
plugins = false
"""


class CodexRouteError(Exception):
    pass


def upstream(agent_input: AgentInput) -> Upstream:
    """Where Codex's requests go (CODEX_BASE_URL, else OpenAI), keyed by CODEX_API_KEY: the model proxy's side."""
    key = agent_input.run.credentials.get("CODEX_API_KEY")
    if not key:
        raise CodexRouteError("the codex agent needs CODEX_API_KEY (and optionally CODEX_BASE_URL)")
    return Upstream(os.environ.get("CODEX_BASE_URL") or DEFAULT_BASE_URL, "authorization", f"Bearer {key}", OPENAI_API)


def codex_model(config: AgentConfig) -> str | None:
    """The task's model, else coder_eval's CODEX_MODEL (its .env's fallback, an Azure deployment's name); None:
    Codex's own default."""
    return config.model or os.environ.get("CODEX_MODEL") or None


def _environment(agent_input: AgentInput, home: Path, grant: Grant) -> dict[str, str]:
    """The Codex CLI's environment: its home, and the grant's token where its key would be."""
    env = base_environment(agent_environment(agent_input.sandbox), home, PASSED_THROUGH)
    env.update({"CODEX_HOME": str(home / ".codex"), "CODEX_API_KEY": grant.token})
    bypass_proxies(env, grant.base_url)
    return env


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string: JSON's escapes of quotes, backslashes and control characters are TOML's too;
    other characters stay literal (JSON's ASCII escape of an emoji is a surrogate pair, which TOML refuses)."""
    return json.dumps(text, ensure_ascii=False)


def _write_config(home: Path, config: AgentConfig, base_url: str) -> None:
    """Its config.toml: the model, a context window (Codex compacts at 90% of it), the task's system prompt as
    developer instructions on top of Codex's own (as coder_eval's codex agent passes it), the grant as its
    provider. A model id or a prompt holding a quote or a newline stays one value (``toml_string``)."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    model = codex_model(config)
    lines = [
        f"model = {toml_string(model)}" if model else "",
        f"model_context_window = {config.context_window}" if config.context_window is not None else "",
        f"developer_instructions = {toml_string(config.system_prompt)}" if config.system_prompt is not None else "",
    ]
    model_line = "\n".join(line for line in lines if line)
    version = os.environ.get("CODEX_API_VERSION")  # Azure's api-version, on every request (coder_eval's setting)
    query = f'query_params = {{ "api-version" = {toml_string(version)} }}' if version else ""
    text = CONFIG_TOML.format(model=model_line, base_url=base_url, query=query)
    (codex_home / "config.toml").write_text(text, encoding="utf-8")


TOOL_ITEMS = ("commandExecution", "fileChange", "mcpToolCall")  # the items that are tool calls


def _completed(item: Any) -> bool:
    return bool(getattr(item.status, "value", item.status) == "completed")


class CodexSession:
    def __init__(self, agent_input: AgentInput):
        self.input = agent_input
        self.output = AgentOutput()
        self.budget = BudgetTracker(agent_input.limits)
        self.started: dict[str, float] = {}
        self.unfinished: dict[str, tuple[Any, TurnRecord]] = {}  # tool items begun and not completed, in their turn
        self.stop_reason: str | None = None
        self.breach: Breach | None = None
        self.closed = False  # the last turn got its usage update
        self.calls_started = 0  # tool calls begun (run_limits.max_tool_calls)
        self.model = codex_model(agent_input.config)  # until the thread names its own (Codex's default, if none)
        self.requests = ModelRequests(lambda: self.halted)  # the model proxy asks it before each request
        self.proxied: tuple[str, str] | None = None  # the model proxy's address, and where it forwards to
        if agent_input.config.allowed_tools is not None or agent_input.config.disallowed_tools:
            self.output.warnings.append(TOOL_LISTS_IGNORED)

    def turn(self) -> TurnRecord:
        """The open turn: items arrive before the usage update that closes their round trip."""
        if not self.output.turns or self.closed:
            self.output.open_turn(TurnRecord(index=len(self.output.turns) + 1))
            self.closed = False
        return self.output.turns[-1]

    def on_usage(self, usage: Any) -> None:
        """A model round trip finished: its usage closes the open turn, then the budgets are checked (the model
        proxy's next request waits for this)."""
        with self.requests.reporting():
            self._close_turn(usage)
            self.requests.reported += 1

    def _close_turn(self, usage: Any) -> None:
        turn, last = self.turn(), usage.last
        turn.output_tokens = last.output_tokens
        turn.cache_read_input_tokens = last.cached_input_tokens
        turn.cache_creation_input_tokens = max(0, last.input_tokens - last.cached_input_tokens)
        self.input.price(turn, self.model)  # Codex reports no cost: its tokens at the run's prices
        self.closed = True
        self.breach = self.breach or self.budget.add(turn)
        max_turns = self.input.limits.max_turns
        if max_turns is not None and self.output.exchange_turns >= max_turns and turn.calls and not self.halted:
            self.output.stop_reason = "max_turns"  # its calls' results would go back to the model

    def on_item(self, item: Any, completed: bool) -> ToolCallRecord | None:
        kind = getattr(item, "type", None)
        if not completed:
            self.started[item.id] = time.perf_counter()
            if kind in TOOL_ITEMS:
                self.calls_started += 1
                self.unfinished[item.id] = (item, self.turn())
            return None
        self.unfinished.pop(item.id, None)
        return self._tool_call(item, ran_to_its_end=True)

    def record_unfinished(self) -> None:
        """The turn ended: a call it interrupted (past max_tool_calls, an early stop, a time limit) with no
        completion is recorded as it started, an error (its outcome unknown), not lost."""
        for item, turn in self.unfinished.values():
            self._tool_call(item, ran_to_its_end=False, turn=turn)
        self.unfinished.clear()

    def _tool_call(self, item: Any, ran_to_its_end: bool, turn: TurnRecord | None = None) -> ToolCallRecord | None:
        """The call ``item`` in ``turn`` (the open one unless given); an agent message's text."""
        kind = getattr(item, "type", None)
        if kind == "agentMessage":
            turn = self.turn()
            turn.text = (turn.text + "\n" if turn.text else "") + item.text
            return None
        if kind == "commandExecution":
            ok = ran_to_its_end and _completed(item) and item.exit_code == 0
            return self._call("Bash", {"command": item.command}, ok, item, item.aggregated_output, turn)
        if kind == "fileChange":
            ok = ran_to_its_end and _completed(item)
            return self._call("Edit", {"paths": [c.path for c in item.changes or []]}, ok, item, None, turn)
        if kind == "mcpToolCall":
            ok = ran_to_its_end and item.error is None
            return self._call(f"{item.server}/{item.tool}", {"arguments": item.arguments}, ok, item, None, turn)
        return None

    def _call(
        self, tool: str, parameters: dict[str, Any], ok: bool, item: Any, output: str | None, turn: TurnRecord | None
    ) -> ToolCallRecord:
        turn = turn if turn is not None else self.turn()
        started = self.started.pop(item.id, None)
        measured = getattr(item, "duration_ms", None)
        duration = (
            measured
            if isinstance(measured, (int, float))
            else (time.perf_counter() - started) * 1000
            if started
            else 0.0
        )
        call = ToolCallRecord(
            turn=turn.index,
            seq=len(turn.calls) + 1,
            tool=tool,
            parameters=parameters,
            status="success" if ok else "error",
            duration_ms=round(float(duration), 1),
            started_at=time.time() - float(duration) / 1000,
            output=recorded_output(output) if output else None,
        )
        turn.calls.append(call)
        return call

    def named(self, message: str) -> str:
        """An error naming the model proxy's address says where it forwarded to (``named_in``)."""
        return named_in(message, *self.proxied) if self.proxied else message

    @property
    def halted(self) -> bool:
        """An early stop, a budget breach, the tool-call cap or max_turns: the turn is interrupted, no exchange
        follows."""
        return bool(self.stop_reason or self.breach or self.output.stop_reason in ("max_tool_calls", "max_turns"))

    def finish(self) -> AgentOutput:
        """The run's output; a call still running when it ended (a time limit cancels the exchange) is recorded."""
        self.record_unfinished()
        self.output.model = self.model
        self.output.uncosted_are_unknown()
        return self.output.conclude(self.budget, self.breach, self.stop_reason, self.input.limits.max_turns)


async def _exchange(thread: Any, agent_input: AgentInput, session: CodexSession, prompt: str) -> None:
    """One user message and the agent's whole turn on the thread."""
    from openai_codex import Sandbox

    turn = await thread.turn(prompt, sandbox=Sandbox.full_access)
    interrupted = False
    async for event in turn.stream():
        payload = event.payload
        name = type(payload).__name__
        if name == "ThreadTokenUsageUpdatedNotification":
            session.on_usage(payload.token_usage)
        elif name in ("ItemStartedNotification", "ItemCompletedNotification"):
            call = session.on_item(payload.item.root, completed=name == "ItemCompletedNotification")
            watcher = agent_input.watcher
            reason = watcher.observe(call) if watcher and call else None
            if reason:
                session.stop_reason = reason
            elif agent_input.calls_exhausted(session.calls_started - 1):  # a tool call past the cap just started
                session.output.stop_at_tool_cap(agent_input.limits.max_tool_calls)
        elif name == "TurnCompletedNotification":
            status = getattr(payload.turn.status, "value", payload.turn.status)
            if status == "failed" and not session.halted:
                raise RuntimeError(f"codex turn failed: {turn_error(payload.turn.error)}")
            break
        if session.halted and not interrupted:  # the rest is read to the turn's end: the cut call, its usage
            interrupted = True
            await _interrupt(turn)
    session.record_unfinished()


def turn_error(error: Any) -> str:
    """Codex's message, with its error info as coder_eval appends it: the kind and the HTTP status (a 500 that
    is only in the info is an API error, not the agent's crash), and a kind that carries no status in words."""
    message = getattr(error, "message", None) or str(error)
    info = getattr(error, "codex_error_info", None)
    if info is None:
        return message
    shown = info.model_dump(mode="json", by_alias=True) if hasattr(info, "model_dump") else info
    words = kind_in_words(shown)
    return f"{message} (codexErrorInfo={json.dumps(shown)}{f': {words}' if words else ''})"


def kind_in_words(shown: Any) -> str | None:
    """What Codex's error kind says of the failure, in words ``error_categories`` reads (Codex names a 500 by
    its kind alone); None when the kind's HTTP status says it, or the kind says nothing (``other``)."""
    if isinstance(shown, str):
        return CODEX_ERROR_KINDS.get(shown)
    if isinstance(shown, dict) and len(shown) == 1:
        ((kind, detail),) = shown.items()
        if not (isinstance(detail, dict) and detail.get("httpStatusCode")):
            return CODEX_ERROR_KINDS.get(kind)
    return None


async def _interrupt(turn: Any) -> None:
    """Interrupt the turn; one that had just ended (its last usage update breached a budget) has nothing to
    interrupt, which Codex answers with an error that is no failure of the run."""
    try:
        await turn.interrupt()
    except Exception as exc:
        if "no active turn" not in str(exc):
            raise


async def _converse(agent_input: AgentInput, session: CodexSession, home: Path, grant: Grant) -> None:
    """The exchanges of one thread: the prompt, then each user message of a dialog, until it ends."""
    from codex_cli_bin import bundled_codex_path
    from openai_codex import AsyncCodex, CodexConfig, Sandbox

    env = _environment(agent_input, home, grant)
    wrapper = write_wrapper(
        home,
        agent_input.sandbox.agent_command(home, str(bundled_codex_path())),
        list(env),
        agent_input.sandbox.agent_launcher(home),
    )
    config = CodexConfig(codex_bin=str(wrapper), cwd=str(agent_input.sandbox.root), env=env)
    async with AsyncCodex(config) as codex:
        thread = await codex.thread_start(
            cwd=str(agent_input.sandbox.workdir), sandbox=Sandbox.full_access, model=agent_input.config.model
        )
        session.model = (await thread.read()).thread.model or session.model  # the model the thread runs
        await agent_input.converse(
            lambda prompt: _exchange(thread, agent_input, session, prompt), lambda _: session.halted, session.output
        )


async def run(agent_input: AgentInput) -> AgentOutput:
    session = CodexSession(agent_input)
    with agent_home("coder-eval-codex-") as home:
        try:
            host = agent_input.sandbox.model_proxy_host()
            route = upstream(agent_input)
            with agent_input.run.grant(route, host, session.requests.admit) as grant:
                session.proxied = (grant.base_url, route.base_url)
                _write_config(home, agent_input.config, grant.base_url)
                conversation = _converse(agent_input, session, home, grant)
                await asyncio.wait_for(conversation, timeout=agent_input.conversation_limit())
            return session.finish()
        except TimeoutError:
            return session.finish().timed_out(agent_input.expired_limit())
        except ImportError:
            output = session.finish()
            output.stop_reason = "error"
            output.error = "the codex agent needs the codex extra: pip install 'coder-eval-dagster[codex]'"
            return output
        except Exception as exc:  # an SDK or API failure ends this task as ERROR, never the run
            output = session.finish()
            output.stop_reason, output.error = "error", redact(session.named(f"{type(exc).__name__}: {exc}"))
            return output
