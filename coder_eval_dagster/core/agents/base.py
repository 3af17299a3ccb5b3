"""One agent interface: sandbox, prompt, config and limits in; turns, usage and a stop reason out.

Every agent type, built in or added by an installed package (see
``registry``), implements :class:`Agent`: ``async def run(agent_input:
AgentInput) -> AgentOutput``. What comes in (:class:`AgentInput`): the
evaluation's sandbox (``sandbox.base.Sandbox``: its folder, its commands'
environment, how to start a CLI in it), the prompt, the task's ``agent:``
block (``models.agent.AgentConfig``), its ``run_limits``, the early-stop
watcher, the dialog hook and the run context (credentials, model proxy
grants). What goes out (:class:`AgentOutput`): the turns (model round trips,
each with its usage, cost and tool calls), the final text, why it stopped
and, for a timeout or a budget breach, the final status. ``run`` never
raises for a failure of the agent itself: it returns ``stop_reason="error"``
with the reason, and the evaluation ends ERROR.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from ..early_stop import Watcher
from ..limits import COST_BUDGET_EXCEEDED, Breach, BudgetTracker
from ..models.agent import AgentConfig
from ..models.limits import RunLimits
from ..models.results import FinalStatus, TurnRecord, final_reply
from ..sandbox.base import Sandbox
from ..secrets import redact

T = TypeVar("T")

if TYPE_CHECKING:
    from ..run_context import RunContext

StopReason = Literal[
    "completed",
    "max_turns",
    "max_tool_calls",
    "task_timeout",
    "turn_timeout",
    "token_budget",
    "cost_budget",
    "early_stop",
    "error",
]
TimeLimit = Literal["task_timeout", "turn_timeout"]  # the run_limits field that ran out
# how an agent stops mid-turn: the words of its last turn are no final reply when its calls were cut
CUT_SHORT = frozenset({"task_timeout", "turn_timeout", "token_budget", "cost_budget", "error"})
OUTPUT_CHARS = 2000  # of a tool call's output, what a trajectory keeps


def recorded_output(text: str) -> str:
    """A tool call's output as a trajectory keeps it: redacted whole, then cut at OUTPUT_CHARS with ``…`` (cut
    first, a secret across the cut kept its first characters)."""
    shown = redact(text)
    return shown if len(shown) <= OUTPUT_CHARS else shown[:OUTPUT_CHARS] + "…"


def budget_stop_reason(breach: Breach) -> StopReason:
    return "cost_budget" if breach == COST_BUDGET_EXCEEDED else "token_budget"


@dataclass
class AgentInput:
    sandbox: Sandbox
    prompt: str | None
    config: AgentConfig
    limits: RunLimits
    task_dir: Path
    row: dict[str, Any] | None = None
    watcher: Watcher | None = None  # the early-stop watcher, when the task has armed criteria
    started: float = field(default_factory=time.monotonic)
    # A simulated dialog: called after each completed exchange with the output so far, it returns the user's
    # next message (None: the dialog is over). None: a single-shot run, one exchange.
    dialog: Callable[[AgentOutput], str | None] | None = None
    run: RunContext = field(kw_only=True)  # the run's context: its model route and credentials
    trace_id: str | None = field(default=None, kw_only=True)  # the evaluation's trace (telemetry on)

    def next_message(self, output: AgentOutput) -> str | None:
        """The user's next message after a completed exchange (None: the conversation is over); the exchange it
        opens starts counting its turns against run_limits.max_turns afresh."""
        message = self.dialog(output) if self.dialog is not None else None
        if message is not None:
            output.exchange_start = len(output.turns)
        return message

    async def converse(
        self, exchange: Callable[[str], Awaitable[T]], stop: Callable[[T], bool], output: AgentOutput
    ) -> T | None:
        """The exchanges of one conversation, as every CLI agent has them: the prompt, then each user message of a
        dialog, each within the time limit; over early when ``stop`` says so of an exchange's outcome (returned)."""
        prompt: str | None = self.prompt or ""
        while prompt is not None:
            outcome = await asyncio.wait_for(exchange(prompt), timeout=self.time_limit())
            if stop(outcome):
                return outcome
            prompt = await asyncio.to_thread(self.next_message, output)
        return None

    def calls_exhausted(self, made: int) -> bool:
        """True when, ``made`` tool calls in, another one would exceed ``run_limits.max_tool_calls``: that call is
        refused (or, where an agent cannot refuse one, interrupted as it starts) and the run ends."""
        cap = self.limits.max_tool_calls
        return cap is not None and made >= cap

    def time_limit(self) -> float | None:
        """Seconds the next exchange may take (task or turn timeout, whichever is sooner)."""
        limits = [x for x in (self.seconds_left(), self.limits.turn_timeout) if x is not None]
        return min(limits) if limits else None

    def conversation_limit(self) -> float | None:
        """Seconds the whole conversation may take: its one exchange's, or for a dialog what remains of the task's."""
        return self.time_limit() if self.dialog is None else self.seconds_left()

    def expired_limit(self) -> TimeLimit:
        """Which limit ran out when the conversation timed out."""
        left = self.seconds_left()
        return "task_timeout" if left is not None and left <= 0 else "turn_timeout"

    def price(self, turn: TurnRecord, model: str | None = None) -> None:
        """Cost a turn the agent reported none for at the run's prices (``model``: default, the task's agent.model);
        a turn with a reported cost keeps it unless the run's price file prices the model. Before the budget sees
        the turn, so that ``max_usd`` binds."""
        model = model or self.config.model
        if turn.cost_source == "reported" and not self.run.prices.wins_over_reported(model):
            return
        usage = self.run.prices.priced(model, turn.usage)
        turn.cost_usd, turn.cost_source = usage.total_cost_usd, usage.cost_source

    def seconds_left(self) -> float | None:
        """What remains of run_limits.task_timeout (None: no limit)."""
        if self.limits.task_timeout is None:
            return None
        return self.limits.task_timeout - (time.monotonic() - self.started)


@dataclass
class AgentOutput:
    turns: list[TurnRecord] = field(default_factory=list)
    final_text: str | None = None
    model: str | None = None  # the model the agent reported answering with (None: it named none)
    stop_reason: StopReason = "completed"
    final_status: FinalStatus | None = None  # TIMEOUT / budget statuses; None: scored normally
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    early_stop_reason: str | None = None
    turns_remaining_at_stop: int | None = None
    exchange_start: int = 0  # the first turn of the current exchange (a dialog's; single-shot: the only one)

    @property
    def exchange_turns(self) -> int:
        """The current exchange's turns: what run_limits.max_turns caps, as coder_eval caps each iteration."""
        return len(self.turns) - self.exchange_start

    def timed_out(self, limit: TimeLimit) -> AgentOutput:
        """Ended by ``limit`` (``agent_input.expired_limit()``): a TIMEOUT, its error naming the limit (without one
        the criteria's verdict would stand)."""
        self.stop_reason, self.final_status, self.error = limit, "TIMEOUT", f"run_limits.{limit} reached"
        return self

    def early_stop(self, reason: str, turns_used: int, max_turns: int | None) -> None:
        self.stop_reason = "early_stop"
        self.early_stop_reason = reason
        self.turns_remaining_at_stop = max_turns - turns_used if max_turns is not None else None

    def open_turn(self, turn: TurnRecord) -> TurnRecord:
        """Add the next model round trip, stamping when it began and when the previous one ended."""
        now = time.time()
        if self.turns and self.turns[-1].ended_at is None:
            self.turns[-1].ended_at = now
        turn.started_at = turn.started_at or now
        self.turns.append(turn)
        return turn

    def conclude(
        self, budget: BudgetTracker, breach: Breach | None, stop: str | None, max_turns: int | None
    ) -> AgentOutput:
        """The common end of every agent: a budget breach, the no-cost warning, an early stop, the final text."""
        if breach and self.final_status is None:
            self.stop_reason = budget_stop_reason(breach)
            self.final_status, self.error = breach, budget.breach_message(breach)
        if self.turns and self.turns[-1].ended_at is None:
            self.turns[-1].ended_at = time.time()
        budget.finish()
        self.warnings.extend(budget.warnings)
        if stop:
            self.early_stop(stop, self.exchange_turns, max_turns)
        self.final_text = final_reply(self.turns, self.stop_reason in CUT_SHORT)
        return self

    def uncosted_are_unknown(self) -> None:
        """Turns whose usage never came (the CLI stopped mid round trip, a round trip the API billed): their cost is
        ``unknown``, not 0, so the run's cost says it is a floor (``cost_complete``)."""
        for turn in self.turns:
            if turn.cost_source is None:
                turn.cost_source = "unknown"

    def stop_at_tool_cap(self, cap: int | None) -> None:
        """``run_limits.max_tool_calls`` reached: the agent stops here, and the result's warnings say so."""
        if self.stop_reason != "max_tool_calls":
            self.stop_reason = "max_tool_calls"
            self.warnings.append(f"run_limits.max_tool_calls ({cap}) reached: the agent was stopped there")

    @property
    def calls_made(self) -> int:
        return sum(len(turn.calls) for turn in self.turns)

    @property
    def visible_turns(self) -> int:
        """One per tool call plus one for the final reply (the expected_turns measure)."""
        calls = sum(len(turn.calls) for turn in self.turns)
        return calls + (1 if self.final_text else 0)


class Agent(Protocol):
    """An agent type: a module or an object with this coroutine function.

    How it should behave (what the built-ins do, and the tests check):

    - Start a CLI with ``core/agent_cli.py``: an allow-listed environment,
      its own HOME (``agent_home``), the command through
      ``sandbox.agent_command`` and ``sandbox.agent_launcher()`` (into the
      evaluation's namespace or container, so nothing it starts outlives the
      evaluation), and a model proxy grant in place of any key
      (``agent_input.run.grant(upstream, sandbox.model_proxy_host())``).
    - Record each model round trip as a ``TurnRecord`` (usage, cost or None,
      text) and each tool call as a ``ToolCallRecord`` (tool, parameters,
      status, duration, output through ``secrets.redact``).
    - Honour the limits: ``agent_input.time_limit()`` per exchange (a timeout
      is ``output.timed_out(agent_input.expired_limit())``: ``final_status="TIMEOUT"``
      with an ``error`` saying which limit), ``limits.max_turns``, the budgets
      (``limits.BudgetTracker.add`` after each turn; ``AgentOutput.conclude``
      records a breach), ``watcher.observe(call)`` after each call (a reason:
      stop the agent and pass it to ``conclude``).
    - For a dialog, after each exchange ask ``agent_input.next_message(output)``
      and continue the same session with it until it returns None.

    A type may also have ``install() -> str``, the install step run by
    ``coder-eval agents install TYPE`` (it returns what it installed where).
    """

    async def run(self, agent_input: AgentInput) -> AgentOutput: ...
