"""The `claude-code` agent: claude-agent-sdk driving the Claude Code CLI bundled in its wheel.

Isolation: the CLI runs with its own temporary HOME and config dir, the
task's ``setting_sources`` (coder_eval's ``[project]`` by default) without
the project's MCP servers or hooks (``allowed_tools`` stay the only tools),
non-essential traffic off, and only the environment it needs: the SDK passes
the caller's whole environment to the CLI, so the CLI is started through a
two-line wrapper that ``exec``s it under ``env -i`` with an allow-list of
variable names (no value is written to disk).

The system prompt is Claude Code's own (the ``claude_code`` preset, its
per-run sections moved into the first message so that it stays the same
from run to run) with ``agent.system_prompt`` appended, or that prompt alone
under ``system_prompt_mode: replace``. ``agent.allowed_tools`` are the tools offered (the SDK's
``tools``) as well as pre-approved. ``agent.plugins`` are copied into the
agent's HOME (so that a container sees them too) and offered through the
SDK's ``plugins`` option: their skills become the agent's.

``run_limits.max_tool_calls``: once the agent has made that many tool calls,
any further call is refused and the run ends (stop reason ``max_tool_calls``);
the criteria then grade what it left. A call the PreToolUse hook refuses
because the run is stopping (the cap, an early stop, a spent budget) never
ran: it is not recorded, as a replay never plays it.

Telemetry comes live from the PreToolUse / PostToolUse hooks; a turn is one
model round trip (one assistant message id) with its usage. The early-stop
watcher runs in the PostToolUse hook and ends the loop with
``continue_: False``. Token budgets and ``max_usd`` are checked after each
completed turn, in the PostToolUse hook of its last call to end (a turn over a
cap is the last: its own calls all run, no model request follows it); that
hook first waits until the turn has streamed to its end, so that its usage is
all in. Claude Code reports the cost at the end of each
exchange, so until then a turn's cost is its tokens at the run's prices
(none when the model has no price: ``max_usd`` is then checked at the end). After a stop (a breach, an early
stop, the tool-call cap) the CLI is interrupted and the rest of its answer is still read, up to its result
and for at most ``DRAIN_S``: the cut turn's last usage (its ``message_delta``) and the reported cost come
there. A tool call's output is the text the model received for it: its ``tool_result`` in the user message the
CLI streams back (a failed or refused call's error text, is_error), never the hooks' ``tool_response`` object,
which is the CLI's own record (``{"stdout": ..., "interrupted": ...}``) and no text the model saw; the hooks give
the call's time and, for the early-stop watcher, its status as soon as it ends. Each exchange's ResultMessage
is kept on its last turn as the schema's ``result_summary`` (an API error is ``is_error`` there, and the
CLI's made-up "API Error: ..." message is no reply of the model's). A time limit cuts the exchange at its
deadline: the calls still running are recorded as they stand (errors, timed up to the cut), and what the agent
runs in the sandbox ends then, not after the SDK's grace for the CLI to exit. A simulated dialog continues the
same client (one CLI session) with each user message, so the agent keeps
its context; the SDK reports the cost cumulatively, each exchange gets the
difference.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import shutil
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agent_cli import SDK_VARIABLES, agent_home, bundled_cli, cli_environment, within, write_wrapper
from ..limits import Breach, BudgetTracker
from ..model_proxy import named_in
from ..models.agent import AgentConfig
from ..models.results import ToolCallRecord, ToolCallStatus, TurnRecord
from ..routing import ApiRoute
from ..sandbox.mocks import agent_environment
from ..secrets import redact
from .base import AgentInput, AgentOutput, recorded_output

if TYPE_CHECKING:  # the SDK is imported on first use (start-up stays light)
    from claude_agent_sdk import (
        AssistantMessage,
        ClaudeAgentOptions,
        ClaudeSDKClient,
        ResultMessage,
        SystemMessage,
        UserMessage,
    )
    from claude_agent_sdk.types import (
        HookContext,
        HookEvent,
        HookInput,
        SdkPluginConfig,
        SyncHookJSONOutput,
        SystemPromptPreset,
    )

STDERR_LINES = 20
DRAIN_S = 30.0  # after a stop: how long the rest of the answer (its last usage, the reported cost) is waited for
TURN_END_WAIT_S = 10.0  # how long a tool hook waits for its turn's end (its last usage) before checking the budgets
BUDGET_CAPS = ("max_input_tokens", "max_output_tokens", "max_total_tokens", "max_usd")  # checked after each turn
SYNTHETIC_MODEL = "<synthetic>"  # what Claude Code names as the model of a message it made up (an API error's)
SKILL_TOOL = "Skill"


class Session:
    """The telemetry and limits of one claude-code run."""

    def __init__(self, agent_input: AgentInput):
        self.input = agent_input
        self.output = AgentOutput()
        model, prices = agent_input.config.model, agent_input.run.prices
        self.budget = BudgetTracker(
            agent_input.limits, estimate=lambda turn: prices.cost(self.output.model or model, turn.usage, warn=False)
        )
        self.breached: Breach | None = None  # a budget over its cap: no further tool call, no further turn
        self.turn_of: dict[str, TurnRecord] = {}  # assistant message id -> turn
        self.call_of: dict[str, ToolCallRecord] = {}  # tool_use id -> call
        # tool_use id -> when its PreToolUse hook let it run, and that hook's input (a call cut by a time limit has
        # no other hook)
        self.running: dict[str, tuple[float, Mapping[str, Any]]] = {}
        self.refused: set[str] = set()  # tool_use ids the PreToolUse hook refused: they never ran
        self.message_of: dict[str, str] = {}  # tool_use id -> the assistant message id that made the call
        self.ended: set[str] = set()  # assistant message ids streamed to their end (message_delta: the last usage)
        self.progress = asyncio.Event()  # set (and replaced) at each streamed step a waiting tool hook may need
        self.stop_requested: str | None = None  # the early-stop watcher's reason
        self.calls_started = 0  # tool calls let through (run_limits.max_tool_calls)
        self.streaming: str | None = None  # the assistant message id being streamed
        self.answered: set[str] = set()  # the message ids an assistant message came for (a cut stream has none)
        self.budgeted = 0  # turns already added to the budget
        self.capped = any(getattr(agent_input.limits, cap) is not None for cap in BUDGET_CAPS)
        self.cost_reported = 0.0  # the session's cumulative cost so far (the SDK reports it cumulatively)
        self.cost_covered = 0  # the turns the reported cost covers (an exchange's cost comes at its end)
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES)  # the CLI's last words, for an error's reason

    def on_stderr(self, line: str) -> None:
        """The CLI's stderr is kept, not printed: ten agents at once would bury the progress display."""
        self.stderr.append(line.rstrip())

    def failure(self, exc: BaseException) -> str:
        """Why the agent failed: the exception, and what the CLI said last on stderr."""
        said = "; ".join(line for line in self.stderr if line)
        return redact(f"{type(exc).__name__}: {exc}" + (f" (CLI stderr: {said})" if said else ""))

    # ----------------------------------------------------------------- hooks

    @property
    def halted(self) -> str | None:
        """Why no further tool call may run: an early stop, or the tool-call cap reached (None: it may)."""
        if self.stop_requested:
            return f"coder-eval early stop: {self.stop_requested}"
        if self.breached:
            return f"coder-eval: a run_limits budget is spent ({self.breached})"
        if self.output.stop_reason == "max_tool_calls":
            return f"coder-eval: run_limits.max_tool_calls ({self.input.limits.max_tool_calls}) reached"
        return None

    async def pre_tool(self, data: HookInput, tool_use_id: str | None, _ctx: HookContext) -> SyncHookJSONOutput:
        """Let a call run, or refuse it once the run is stopping; a turn's own calls all run, the budgets are checked
        once it is complete (``_observe``)."""
        if self.input.calls_exhausted(self.calls_started):
            self.output.stop_at_tool_cap(self.input.limits.max_tool_calls)
        if self.halted:  # the run was stopped: no further tool call may run, whatever is in flight
            self._refuse(tool_use_id)
            return {
                "continue_": False,
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": self.halted,
                },
            }
        self.calls_started += 1
        if tool_use_id:
            self.running[tool_use_id] = (time.perf_counter(), data)
        return {}

    def _refuse(self, tool_use_id: str | None) -> None:
        """A call refused because the run is stopping never ran: it is no command of the trajectory (a replay never
        plays it), whether its assistant message reached us before this hook or comes after."""
        if tool_use_id is None:
            return
        self.refused.add(tool_use_id)
        call = self.call_of.pop(tool_use_id, None)
        if call is not None:
            self.output.turns[call.turn - 1].calls.remove(call)

    async def post_tool(self, data: HookInput, tool_use_id: str | None, _ctx: HookContext) -> SyncHookJSONOutput:
        return await self._observe(data, tool_use_id, "success")

    async def failed_tool(self, data: HookInput, tool_use_id: str | None, _ctx: HookContext) -> SyncHookJSONOutput:
        return await self._observe(data, tool_use_id, "error")

    async def _observe(self, data: HookInput, tool_use_id: str | None, status: ToolCallStatus) -> SyncHookJSONOutput:
        """Record the call that ended, feed the early-stop watcher, and check the budgets once its turn is complete;
        tell the CLI to stop when the run is stopping (no model request follows)."""
        if self.capped and tool_use_id:  # the turn's usage and calls are then known before it is judged
            await self._until_streamed(tool_use_id)
        call = self._finish_call(data, tool_use_id, status)
        watcher = self.input.watcher
        reason = watcher.observe(call) if watcher and call else None
        if reason:
            self.stop_requested = reason
        if call is not None and self._turn_done(call):  # its calls have all ended: a breach stops before the next
            self.breached = self.breached or self._over_a_cap()
        halted = self.halted
        return {"continue_": False, "stopReason": halted} if halted else {}

    def _streamed(self, tool_use_id: str) -> bool:
        """Whether the message that made this call has streamed to its end (or was cut: another one began)."""
        key = self.message_of.get(tool_use_id)
        return key is not None and (key in self.ended or key != self.streaming)

    async def _until_streamed(self, tool_use_id: str) -> None:
        """Wait, for at most TURN_END_WAIT_S, until the call's message has streamed to its end: the CLI runs a call
        as soon as its block is streamed, and the SDK answers a hook before the messages before it reach us."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(TURN_END_WAIT_S):
                while not self._streamed(tool_use_id):
                    await self.progress.wait()

    def _advance(self) -> None:
        """Wake the tool hooks waiting for a message's end."""
        self.progress.set()
        self.progress = asyncio.Event()

    def _turn_done(self, call: ToolCallRecord) -> bool:
        """Whether every call of ``call``'s turn has ended (its hook, or its tool result, said how)."""
        return all(other.status != "unknown" for other in self.output.turns[call.turn - 1].calls)

    def cut(self) -> None:
        """The exchange was cut (a time limit, the run interrupted): each call still running is recorded as it
        stands, an error (its outcome unknown, no result reached the model) timed from its start up to now, and what
        the agent runs in the sandbox ends now, the services kept (under docker too); the SDK gives the CLI a grace
        to exit, and its tools wrote on into the sandbox meanwhile."""
        for tool_use_id, (_, data) in list(self.running.items()):
            self._finish_call(data, tool_use_id, "error")
        try:
            if note := self.input.sandbox.end_leftovers():
                self.output.warnings.append(note)
        except Exception as exc:  # (the cut stands: a TIMEOUT is not turned into an ERROR by its clean-up)
            self.output.warnings.append(f"the agent's processes could not be ended at the cut: {exc}")

    def _finish_call(
        self, data: Mapping[str, Any], tool_use_id: str | None, status: ToolCallStatus
    ) -> ToolCallRecord | None:
        """Time a call and give its status from its PostToolUse(Failure) hook's input (a cut call's: its PreToolUse
        hook's), read as the JSON the CLI sent; its output comes with its tool result (``on_user``)."""
        call = self.call_of.get(tool_use_id or "")
        if call is None:  # the hook ran before the assistant message reached us
            call = self._new_call(
                tool_use_id or f"hook-{len(self.call_of)}",
                data.get("tool_name", "?"),
                data.get("tool_input") or {},
                self._current_turn(),
            )
        started, _ = self.running.pop(tool_use_id or "", (None, data))
        measured = data.get("duration_ms")
        call.duration_ms = round(
            measured
            if isinstance(measured, (int, float))
            else (time.perf_counter() - started) * 1000
            if started
            else 0.0,
            1,
        )
        call.started_at = time.time() - call.duration_ms / 1000
        response = data.get("tool_response")
        call.status = "error" if isinstance(response, dict) and response.get("interrupted") else status
        return call

    # ----------------------------------------------------------------- messages

    def _current_turn(self) -> TurnRecord:
        if not self.output.turns:
            self.output.open_turn(TurnRecord(index=1))
        return self.output.turns[-1]

    def _new_call(self, tool_use_id: str, tool: str, parameters: object, turn: TurnRecord) -> ToolCallRecord:
        """A call as the model made it; an input that is no JSON object (the CLI refuses the call) is kept whole."""
        given = dict(parameters) if isinstance(parameters, Mapping) else {"input": parameters}
        call = ToolCallRecord(turn=turn.index, seq=len(turn.calls) + 1, tool=tool, parameters=given)
        turn.calls.append(call)
        self.call_of[tool_use_id] = call
        return call

    def _turn(self, key: str) -> tuple[TurnRecord, Breach | None]:
        """The turn of an assistant message id, opening it (and closing the previous one) if new."""
        turn = self.turn_of.get(key)
        if turn is not None:
            return turn, None
        breach = self.settle()  # the previous turn is complete
        turn = self.output.open_turn(TurnRecord(index=len(self.output.turns) + 1))
        self.turn_of[key] = turn
        return turn, breach

    def _adopt_cut_stream(self, key: str) -> None:
        """A new message while the one streamed got no assistant message: its stream was cut and the CLI asked
        again; the retry is the same turn (its usage the larger of the two), not one more."""
        cut = self.streaming
        if key not in self.turn_of and cut is not None and cut in self.turn_of and cut not in self.answered:
            self.turn_of[key] = self.turn_of[cut]
            self.answered.add(cut)  # the retry answers for it

    @staticmethod
    def _add_usage(turn: TurnRecord, usage: dict[str, Any] | None) -> None:
        for name in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            value = (usage or {}).get(name)
            if isinstance(value, int):
                setattr(turn, name, max(getattr(turn, name), value))

    def on_stream(self, event: dict[str, Any]) -> Breach | None:
        """Usage as the API streams it: message_start (input) and message_delta (final output)."""
        if event.get("type") == "message_start":
            message = event.get("message") or {}
            key = str(message.get("id") or f"anon-{len(self.turn_of)}")
            self._adopt_cut_stream(key)
            self.streaming = key
            turn, breach = self._turn(key)
            self._add_usage(turn, message.get("usage"))
            self._advance()
            return breach
        block = event.get("content_block") or {}
        if event.get("type") == "content_block_start" and block.get("type") == "tool_use" and self.streaming:
            self.message_of.setdefault(str(block.get("id")), self.streaming)
        if event.get("type") == "message_delta" and self.streaming:
            self._add_usage(self.turn_of[self.streaming], event.get("usage"))
            self.ended.add(self.streaming)
            self._advance()
        return None

    def on_system(self, message: SystemMessage) -> None:
        """The session's init message names the model the CLI asks for (its default when the task names none)."""
        model = message.data.get("model") if message.subtype == "init" else None
        if isinstance(model, str) and model and self.output.model is None:
            self.output.model = model

    def on_assistant(self, message: AssistantMessage) -> Breach | None:
        """Record an assistant message and the model that answered; a budget breach's status when a turn completes
        over a cap."""
        from claude_agent_sdk import TextBlock, ToolUseBlock

        made_up = message.model == SYNTHETIC_MODEL or bool(getattr(message, "error", None))
        if message.model and message.model != SYNTHETIC_MODEL:
            self.output.model = message.model
        key = getattr(message, "message_id", None) or self.streaming or f"anon-{len(self.turn_of)}"
        self._adopt_cut_stream(key)
        self.answered.add(key)
        turn, breach = self._turn(key)
        self._add_usage(turn, getattr(message, "usage", None))
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                self.message_of.setdefault(block.id, key)
                if block.id not in self.call_of and block.id not in self.refused:
                    self._new_call(block.id, block.name, block.input, turn)
            elif isinstance(block, TextBlock) and block.text.strip() and not made_up:
                # the CLI's own message in place of a reply ("API Error: ..."): no reply of the model's, it is
                # in the result's summary (on_result) and the error message
                turn.text = (turn.text + "\n" if turn.text else "") + block.text
        self._advance()
        return breach

    def on_user(self, message: UserMessage) -> None:
        """Tool results: each is its call's output, as the model received it; an is_error result marks its call
        failed (a call Claude Code refused, under permission_mode plan or disallowed_tools, reaches no hook: this
        is its only status), any other leaves the hook's status (an interrupted command is an error)."""
        from claude_agent_sdk import ToolResultBlock

        content = message.content if isinstance(message.content, list) else []
        for block in (block for block in content if isinstance(block, ToolResultBlock)):
            call = self.call_of.get(block.tool_use_id)
            if call is None:
                continue
            call.output = recorded_output(_result_text(block.content))
            if block.is_error:
                call.status = "error"
            elif call.status == "unknown":
                call.status = "success"

    def _over_a_cap(self) -> Breach | None:
        """Whether the turns so far put a budget over its cap: asked once a turn is complete (its calls ended, its
        usage all in); over, no further tool or model request runs. Tried on a copy of the budget: the turns are
        counted once, by ``settle``, with their last usage."""
        trial = copy.copy(self.budget)
        return next((b for turn in self.output.turns[self.budgeted :] if (b := trial.add(turn))), None)

    def settle(self) -> Breach | None:
        """Add the completed turns not yet counted to the budget; the breached budget's status, if any (once
        breached, it stays so)."""
        for turn in self.output.turns[self.budgeted :]:
            self.breached = self.budget.add(turn) or self.breached
        self.budgeted = len(self.output.turns)
        return self.breached

    def on_result(self, message: ResultMessage) -> None:
        """The exchange's end: its cost (cumulative), and the CLI's summary of it on its last turn."""
        if self.output.turns:
            self.output.turns[-1].result_summary = result_summary(message)
        cost = getattr(message, "total_cost_usd", None)
        if self.input.run.prices.wins_over_reported(self.output.model or self.input.config.model):
            cost = None  # the price file's price wins: the turns keep their estimates, for the budget too
        if self.output.turns and isinstance(cost, (int, float)):
            for turn in self.output.turns[self.cost_covered :]:  # the exchange's turns: its cost is on the last
                turn.cost_source = "reported"
            self.output.turns[-1].cost_usd = float(cost) - self.cost_reported
            self.cost_reported, self.cost_covered = float(cost), len(self.output.turns)
        if getattr(message, "subtype", "") == "error_max_turns":
            self.output.stop_reason = "max_turns"

    def finish(self, breach: Breach | None) -> AgentOutput:
        if breach is None and self.output.final_status is None:
            breach = self.settle()  # the last turn, with the cost reported at the end
        for turn in self.output.turns:  # cut off before Claude Code reported their cost, or priced by the price file
            self.input.price(turn, self.output.model)  # at the run's prices: the agent's cost is a floor, not empty
        return self.output.conclude(self.budget, breach, self.stop_requested, self.input.limits.max_turns)


def _result_text(content: str | list[dict[str, Any]] | None) -> str:
    """A tool result's text: a string, or its content blocks' text joined, a block of another kind said by its type
    (a Read of an image: ``[image]``)."""
    if isinstance(content, str):
        return content
    return "\n".join(_block_text(block) for block in content or [])


def _block_text(block: dict[str, Any]) -> str:
    text = block.get("text")
    return text if isinstance(text, str) else f"[{block.get('type', 'content')}]"


def result_summary(message: ResultMessage) -> dict[str, Any]:
    """The CLI's ResultMessage as the schema's ``result_summary`` (and its ``terminal_reason``: an API error is
    ``is_error`` with subtype ``success``, and ``terminal_reason`` ``api_error``)."""
    subtype, stop, text = (getattr(message, name, None) for name in ("subtype", "stop_reason", "result"))
    summary: dict[str, Any] = {
        "is_error": bool(getattr(message, "is_error", False)),
        "subtype": subtype if isinstance(subtype, str) else "unknown",
        "stop_reason": stop if isinstance(stop, str) else None,
        "result": redact(text) if isinstance(text, str) else None,
    }
    terminal = getattr(message, "terminal_reason", None)
    if isinstance(terminal, str):
        summary["terminal_reason"] = terminal
    return summary


def system_prompt(config: AgentConfig) -> str | SystemPromptPreset:
    """Claude Code's own prompt with the task's appended (its per-run sections moved to the first message, so that
    it is the same in every run), or the task's alone under ``system_prompt_mode: replace``."""
    if config.system_prompt_mode == "replace" and config.system_prompt is not None:
        return config.system_prompt
    preset: SystemPromptPreset = {"type": "preset", "preset": "claude_code", "exclude_dynamic_sections": True}
    if config.system_prompt is not None:
        preset["append"] = config.system_prompt
    return preset


def approved_tools(config: AgentConfig) -> list[str]:
    """``allowed_tools``, with ``Skill`` when the agent has plugins: their skills are reached through it alone, and a
    coder_eval skill A/B whose task lists no ``Skill`` (its agent was offered every tool) compared nothing here."""
    rules = list(config.allowed_tools or [])
    if config.plugins and config.allowed_tools is not None and SKILL_TOOL not in rules:
        rules.append(SKILL_TOOL)
    return rules


def offered_tools(config: AgentConfig) -> list[str] | None:
    """The tools the CLI offers at all (its ``tools``): those ``approved_tools`` names (a rule such as ``Bash(git:*)``
    offers its tool), less those disallowed outright; None (Claude Code's own set) when ``allowed_tools`` names
    none. ``allowed_tools`` alone only pre-approves its tools: every other tool stayed offered, and ran."""
    if config.allowed_tools is None:
        return None
    named = dict.fromkeys(rule.split("(", 1)[0].strip() for rule in approved_tools(config))
    return [tool for tool in named if tool not in config.disallowed_tools]


def copied_plugins(config: AgentConfig, home: Path) -> list[SdkPluginConfig]:
    """The task's plugin folders, copied into the agent's HOME (where a container sees them too)."""
    plugins: list[SdkPluginConfig] = []
    for index, plugin in enumerate(config.plugins or []):
        if not Path(plugin.path).is_dir():
            raise FileNotFoundError(f"agent.plugins.{index}: plugin folder not found: {plugin.path}")
        target = home / "plugins" / f"{index}-{Path(plugin.path).name}"
        shutil.copytree(plugin.path, target, ignore_dangling_symlinks=True)
        plugins.append({"type": "local", "path": str(target)})
    return plugins


def build_options(agent_input: AgentInput, session: Session, home: Path, route: ApiRoute) -> ClaudeAgentOptions:
    """The SDK's options; ``route`` is the run's as the CLI gets it (through the model proxy)."""
    from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

    config, limits = agent_input.config, agent_input.limits
    env = cli_environment(agent_environment(agent_input.sandbox), home, route)
    if config.context_window is not None:  # (outranks every settings scope; the host's own never reaches the CLI)
        env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(config.context_window)
    telemetry = agent_input.run.telemetry.cli_environment(agent_input.trace_id)
    if "OTEL_EXPORTER_OTLP_ENDPOINT" in telemetry:  # the CLI's own telemetry: let it through the network policy
        agent_input.sandbox.grant(telemetry["OTEL_EXPORTER_OTLP_ENDPOINT"])
    env.update(telemetry)
    plugins = copied_plugins(config, home)  # before the HOME is copied into a container (agent_command)
    hooks: dict[HookEvent, list[HookMatcher]] = {
        "PreToolUse": [HookMatcher(matcher=None, hooks=[session.pre_tool])],
        "PostToolUse": [HookMatcher(matcher=None, hooks=[session.post_tool])],
        "PostToolUseFailure": [HookMatcher(matcher=None, hooks=[session.failed_tool])],
    }
    return ClaudeAgentOptions(
        model=route.model_id(config.model) if config.model else None,
        allowed_tools=approved_tools(config),
        disallowed_tools=list(config.disallowed_tools),
        permission_mode=config.permission_mode,
        cwd=str(agent_input.sandbox.root),
        env=env,
        max_turns=limits.max_turns,
        setting_sources=list(config.setting_sources or []),
        system_prompt=system_prompt(config),
        plugins=plugins,
        settings=agent_settings(config, agent_input.task_dir),
        hooks=hooks,
        include_partial_messages=True,
        stderr=session.on_stderr,
        cli_path=str(
            write_wrapper(
                home,
                agent_input.sandbox.agent_command(home, bundled_cli()),
                [*env, *SDK_VARIABLES],
                agent_input.sandbox.agent_launcher(home),
            )
        ),
        # the offered tools, or sdk_options' own (never both: models/agent.py); None is Claude Code's own set
        # only the MCP servers coder-eval gives (none): a sandbox's .mcp.json offered its tools past allowed_tools
        **{"tools": offered_tools(config), "strict_mcp_config": True, **config.sdk_options},
    )


# Over every settings scope: the project's hooks off (a hook runs commands whatever allowed_tools offer, and the CLI
# reloads the .claude/settings.json the agent writes mid-session), unless the task's own claude_settings say so.
HOOKS_OFF = {"disableAllHooks": True}


def agent_settings(config: AgentConfig, task_dir: Path) -> str:
    """The CLI's ``--settings``: the task's ``claude_settings`` (a mapping, or a JSON file beside the task) over
    :data:`HOOKS_OFF`, as JSON text (no file for the CLI, confined, to find)."""
    given = config.claude_settings
    if isinstance(given, str):  # a JSON object: checked when the task was read
        given = json.loads((task_dir / given).read_text(encoding="utf-8"))
    return json.dumps({**HOOKS_OFF, **(given or {})})


def _take(session: Session, message: Any) -> Breach | None:
    """Feed one message of the CLI's to the session; a budget breach's status when a turn completes over a cap."""
    from claude_agent_sdk import AssistantMessage, ResultMessage, StreamEvent, SystemMessage, UserMessage

    if isinstance(message, StreamEvent):
        return session.on_stream(message.event)
    if isinstance(message, AssistantMessage):
        return session.on_assistant(message)
    if isinstance(message, UserMessage):
        session.on_user(message)
    elif isinstance(message, SystemMessage):
        session.on_system(message)
    elif isinstance(message, ResultMessage):
        session.on_result(message)
    return None


async def _rest(replies: AsyncIterator[Any], session: Session) -> None:
    """The rest of an interrupted answer, up to its result: the cut turn's last usage (its message_delta) and the
    cost Claude Code reports at the end."""
    async for message in replies:
        _take(session, message)


async def _exchange(client: ClaudeSDKClient, session: Session, prompt: str) -> Breach | None:
    """One user message and the agent's whole answer to it; a budget breach's status, if any. A time limit cancels
    it (the exchange's own, or the conversation's): it is cut there."""
    try:
        return await _answer(client, session, prompt)
    except asyncio.CancelledError:
        session.cut()
        raise


async def _answer(client: ClaudeSDKClient, session: Session, prompt: str) -> Breach | None:
    from claude_agent_sdk import ResultMessage

    breach: Breach | None = None
    await client.query(prompt)
    replies = client.receive_response()
    async for message in replies:
        breach = _take(session, message) or breach
        if breach or session.halted:  # a budget breach, or a stop the CLI did not honour yet
            await client.interrupt()
            # read on to the result, for no longer than DRAIN_S: a CLI that never answers ends the wait, not the run
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(_rest(replies, session), DRAIN_S)
            break
        if isinstance(message, ResultMessage) and message.is_error and message.subtype != "error_max_turns":
            detail = message.result or ", ".join(getattr(message, "errors", None) or []) or message.subtype
            raise RuntimeError(f"the agent ended with an error: {detail}")
    return breach or session.settle()


async def _converse(agent_input: AgentInput, session: Session, options: ClaudeAgentOptions) -> Breach | None:
    """The exchanges of one session: the prompt, then each user message of a dialog, until it ends."""
    from claude_agent_sdk import ClaudeSDKClient

    async with ClaudeSDKClient(options) as client:
        breach = await agent_input.converse(
            lambda prompt: _exchange(client, session, prompt),
            lambda breach: breach is not None or bool(session.halted),
            session.output,
        )
    return breach


async def run(agent_input: AgentInput) -> AgentOutput:
    session = Session(agent_input)
    proxied = agent_input.run.agent_route(agent_input.sandbox.model_proxy_host())
    with agent_home("coder-eval-claude-") as home, proxied as route:
        try:
            options = build_options(agent_input, session, home, route)
            conversation = _converse(agent_input, session, options)
            breach = await within(conversation, agent_input.conversation_limit())
            return session.finish(breach)
        except TimeoutError:
            return session.finish(None).timed_out(agent_input.expired_limit())
        except Exception as exc:  # an SDK or API failure ends this task as ERROR, never the run
            output = session.finish(None)
            output.stop_reason = "error"
            upstream = agent_input.run.route.base_url or "the model API"
            output.error = named_in(session.failure(exc), route.base_url, upstream)
            last = output.turns[-1] if output.turns else None
            if last is not None and not (last.result_summary or {}).get("is_error"):  # the CLI gave no result
                last.result_summary = {
                    "is_error": True,
                    "subtype": "error_during_execution",
                    "stop_reason": None,
                    "result": output.error,
                }
            return output
