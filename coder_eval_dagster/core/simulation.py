"""Simulated-user dialogs: the loop between the subject agent and a simulated user.

The task's ``initial_prompt`` opens the dialog, or, when it has none, the
simulated user's first message, asked for before the agent starts (``open``:
a failure there ends the evaluation, as there is nothing to start the agent
on); after each completed exchange
the agent calls ``Dialog.after_exchange`` (through ``AgentInput.dialog``),
which records the exchange, applies the termination precedence and, only
when nothing fired, asks the simulated user for its next message:

    run_limits breach -> stop_on_criteria_pass -> max_turns -> max_total_tokens -> agent_max_turns -> stop_token

A run_limits breach (budget, timeout, early stop) ends the agent itself
before it reports the exchange; ``finish`` then records what it left.
``task_timeout`` covers the whole dialog: a simulated user's call gets what
is left of it, and once none is, the user is not asked and the dialog ends
as the agent's own timeout ends it (TIMEOUT). The
simulated user is a model call on the run's API route with no tools, whose
system prompt holds the persona, the goal and the constraints and whose
messages are the dialog from the user's side (the reference solution is
never in it). A replayed dialog's user is its trajectory's ``user:`` items.
A failing simulator ends the dialog with ``error``; the task is still scored.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .agents.base import AgentOutput
from .criteria.judging import DEFAULT_JUDGE_MODEL
from .models.results import (
    CriterionResult,
    DialogMessage,
    DialogStopReason,
    SimulationInfo,
    TokenUsage,
    TurnRecord,
    final_reply,
    message_usage,
)
from .models.simulation import Simulation
from .models.task import Task
from .routing import BEDROCK_ANTHROPIC_VERSION
from .run_context import CallAbandoned
from .secrets import redact

if TYPE_CHECKING:
    from .run_context import RunContext
    from .scoring import TurnCheck

log = logging.getLogger(__name__)

DEFAULT_SIMULATOR_MODEL = DEFAULT_JUDGE_MODEL  # as coder_eval: the grading side's models move together
MAX_RETRIES = 3  # the anthropic SDK's bounded retries (429/529/5xx/connection errors)
CALL_TIMEOUT_S = 300.0
MAX_TOKENS = 1024
SIMULATOR_ROLE = "You are role-playing a human user who is talking to an AI coding assistant."
NO_TEXT = "(the assistant replied with no text)"
OPENING_REQUEST = (
    "[The conversation has not started yet. Write your opening message to the assistant, "
    "as your persona would, to pursue your goal.]"
)


# How a dialog the agent ended itself ends, by the agent's stop reason (else a run_limits stop).
AGENT_STOPS: dict[str, DialogStopReason] = {"error": "error", "max_turns": "agent_max_turns"}


class DialogNotOpened(RuntimeError):
    """The simulated user did not give the opening message of a dialog whose task has no prompt."""


class TaskTimeUp(Exception):
    """run_limits.task_timeout, which covers the whole dialog, ran out before the simulated user answered."""


@dataclass
class Utterance:
    text: str
    usage: TokenUsage = field(default_factory=TokenUsage)  # the simulator call's tokens, priced


class SimulatedUser(Protocol):
    @property
    def model(self) -> str | None:
        """The simulator's model as served; None: no model speaks (a replayed dialog's recorded user)."""

    def next_message(self, dialog: list[DialogMessage]) -> Utterance:
        """The user's next message; TaskTimeUp when the task's time ran out before it came."""


# ----------------------------------------------------------------------------- the simulated user


def task_deadline(task: Task) -> float | None:
    """When run_limits.task_timeout runs out (``time.monotonic``; None: no timeout), counted from the dialog's
    start: the opening message is within it too."""
    timeout = task.run_limits.task_timeout
    return None if timeout is None else time.monotonic() + timeout


def time_allowed(ends: float | None) -> float:
    """How long a simulated user's message may take: CALL_TIMEOUT_S, or what is left of the task's time when less;
    TaskTimeUp when none is (no user is asked past it)."""
    if ends is None:
        return CALL_TIMEOUT_S
    left = ends - time.monotonic()
    if left <= 0:
        raise TaskTimeUp
    return min(CALL_TIMEOUT_S, left)


def system_prompt(settings: Simulation) -> str:
    """The simulator's instructions: who it is, what it wants, its rules and how it ends the dialog."""
    lines = [
        SIMULATOR_ROLE,
        "Stay in character; write only the user's next message, plainly, as that person would type it.",
        "",
        f"Persona:\n{settings.persona.strip()}",
        "",
        f"Goal:\n{settings.goal.strip()}",
    ]
    if settings.constraints:
        lines += ["", "Rules you must follow:", *(f"- {rule}" for rule in settings.constraints)]
    lines += [
        "",
        f"When you judge that the assistant has completed your goal, reply with {settings.stop_token} "
        "(you may add a short closing remark before it).",
    ]
    return "\n".join(lines)


def simulator_messages(dialog: list[DialogMessage], opened: bool) -> list[dict[str, str]]:
    """The dialog from the user's side: the agent speaks as ``user``, the simulated user as ``assistant``.

    The Messages API starts with a user turn: when the simulated user
    ``opened`` the dialog, that turn asked it to; else the task's opening
    message and the agent's first reply share it.
    """
    if opened:
        return [{"role": "user", "content": OPENING_REQUEST}, *_from_users_side(dialog)]
    opening, *rest = dialog
    first = (
        f"[You opened the conversation with this message:]\n{opening.text}\n\n[The assistant replied:]\n"
        f"{rest[0].text if rest else NO_TEXT}"
    )
    return [{"role": "user", "content": first}, *_from_users_side(rest[1:])]


def _from_users_side(dialog: list[DialogMessage]) -> list[dict[str, str]]:
    return [{"role": "user" if m.role == "agent" else "assistant", "content": m.text} for m in dialog]


@dataclass
class ModelUser:
    """The simulated user as one tool-less model call per message, on the run's API route."""

    settings: Simulation
    configured: str  # the task's (or the default) id, which the price table knows
    run: RunContext
    opens: bool = False  # it writes the dialog's opening message (the task has no prompt)
    ends: float | None = None  # when the task's time runs out (``task_deadline``)

    @property
    def model(self) -> str:
        """The id the route serves it as, recorded as coder_eval records it (``claude-sonnet-4-6`` directly)."""
        return self.run.route.model_id(self.configured)

    def request(self, dialog: list[DialogMessage]) -> dict[str, Any]:
        route = self.run.route
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "system": system_prompt(self.settings),
            "messages": simulator_messages(dialog, self.opens),
        }
        if route.backend == "bedrock":
            body["extra_body"] = {"anthropic_version": BEDROCK_ANTHROPIC_VERSION}
        return body

    def next_message(self, dialog: list[DialogMessage]) -> Utterance:
        missing = self.run.route.missing_credentials()
        if missing:
            raise RuntimeError(missing)
        create, body = self.run.model_client(MAX_RETRIES, CALL_TIMEOUT_S).messages.create, self.request(dialog)
        within = time_allowed(self.ends)  # (taken last: the client's first making takes seconds)
        try:
            message = self.run.model_call(lambda: create(**body), within)
        except CallAbandoned:
            if within < CALL_TIMEOUT_S and not self.run.interrupt.is_set():  # the task's time ran out first
                raise TaskTimeUp from None
            raise
        text = "\n".join(block.text for block in message.content if getattr(block, "type", None) == "text")
        usage = self.run.prices.priced(self.configured, message_usage(message.usage), self.run.route.backend)
        return Utterance(text, usage)


@dataclass
class RecordedUser:
    """A replayed dialog's user: the trajectory's ``user:`` messages in order (a leading one opens a dialog whose
    task has no prompt); then it ends the dialog."""

    messages: list[str]
    stop_token: str
    said: int = 0
    model: str | None = None
    ends: float | None = None  # when the task's time runs out (``task_deadline``)

    def next_message(self, dialog: list[DialogMessage]) -> Utterance:
        time_allowed(self.ends)  # (as a live user, not asked past the task's time)
        if self.said >= len(self.messages):
            return Utterance(self.stop_token)
        self.said += 1
        return Utterance(self.messages[self.said - 1])


def simulated_user(task: Task, recorded: list[str] | None, run: RunContext) -> SimulatedUser:
    """The recorded user of a replay, else the model on the run's route; the task's time starts now."""
    settings = task.simulation
    assert settings is not None
    ends = task_deadline(task)
    if recorded is not None:
        return RecordedUser(recorded, settings.stop_token, ends=ends)
    return ModelUser(settings, simulator_model(task), run, opens=task.initial_prompt is None, ends=ends)


def simulator_model(task: Task) -> str:
    """``simulation.model``, else the default: never the agent's, or an A/B of agent models would also compare
    two simulated users (coder_eval pins it the same way)."""
    settings = task.simulation
    return (settings.model if settings else None) or DEFAULT_SIMULATOR_MODEL


# ----------------------------------------------------------------------------- the loop


def _agent_tokens(turns: list[TurnRecord]) -> int:
    """All input tokens (uncached, cache read, cache creation) + output, as ``TokenUsage.total_tokens``: the prompt
    a model reads is input however it is billed (codex files its fresh prompt under cache creation)."""
    return sum(t.usage.total_tokens for t in turns)


@dataclass
class Dialog:
    """One dialog's state; ``after_exchange`` is the agent's hook, ``finish`` records how it ended."""

    settings: Simulation
    user: SimulatedUser
    opening: str | None  # the task's prompt; None: the simulated user opens the dialog (``open``)
    check_criteria: Callable[[list[TurnRecord], list[DialogMessage]], TurnCheck]  # the per-turn check
    agent_max_turns: int | None = None  # run_limits.max_turns: the agent's turns in each exchange
    messages: list[DialogMessage] = field(default_factory=list)
    turns: int = 0  # completed exchanges
    seen: int = 0  # agent turns already assigned to an exchange
    # The latest exchange spent run_limits.max_turns (its max_turns_exhausted): each exchange is capped on its own,
    # as coder_eval caps each iteration.
    agent_turns_spent: bool = False
    stop_reason: DialogStopReason | None = None
    simulator_usages: list[TokenUsage] = field(default_factory=list)  # one per simulator call
    simulator_failures: int = 0  # the simulated user's calls that raised or said nothing (each ends the dialog)
    check_usages: list[TokenUsage] = field(default_factory=list)  # the judges' calls in the per-turn checks
    last_check: list[CriterionResult] = field(default_factory=list)  # the latest exchange's per-turn check
    warnings: list[str] = field(default_factory=list)

    def open(self) -> str:
        """The dialog's first message, recorded before the agent starts: the task's prompt, else the user's.

        Raises DialogNotOpened when the simulated user fails, says nothing or
        does not answer within the task's time (its spend is recorded); a stop
        token in the opening is dropped.
        """
        if self.opening is not None:
            self.messages.append(DialogMessage(turn=1, role="user", text=redact(self.opening)))
            return self.opening
        try:
            text, _ = self._hear_user()
        except TaskTimeUp:
            self.stop_reason = "run_limit_exceeded"
            why = "run_limits.task_timeout ran out before the simulated user opened the dialog"
            raise DialogNotOpened(why) from None
        except Exception as exc:
            self._user_failed()
            why = f"the simulated user could not open the dialog: {type(exc).__name__}: {exc}"
            raise DialogNotOpened(redact(why)) from exc
        if not text:
            self._user_failed()
            raise DialogNotOpened("the simulated user sent no opening message")
        return text

    @property
    def simulator_tokens(self) -> int:
        return sum(usage.total_tokens for usage in self.simulator_usages)

    def after_exchange(self, output: AgentOutput) -> str | None:
        """Record the completed exchange; the user's next message, or None when the dialog ends here."""
        self._record_agent(output)
        self.turns += 1
        cap = self.agent_max_turns  # (claude-code's CLI says it stopped there; another agent may go past it)
        self.agent_turns_spent = output.stop_reason == "max_turns" or (cap is not None and output.exchange_turns > cap)
        reason = self._termination(output)
        if reason is None:
            return self._ask_user(output)
        self.stop_reason = reason
        return None

    def _termination(self, output: AgentOutput) -> DialogStopReason | None:
        """The guide's precedence after an exchange, with coder_eval's agent_max_turns after the dialog's own
        caps (the stop token comes last, from the user's next message)."""
        passed = self._check_criteria(output.turns)
        self.messages[-1].criteria_passed = passed
        if passed and self.settings.stop_on_criteria_pass:
            return "criteria_passed"
        if self.turns >= self.settings.max_turns:
            return "max_turns"
        budget = self.settings.max_total_tokens
        if budget is not None and self.simulator_tokens + _agent_tokens(output.turns) >= budget:
            return "budget"
        if self.agent_turns_spent:
            return "agent_max_turns"
        return None

    def _check_criteria(self, turns: list[TurnRecord]) -> bool | None:
        """The per-turn check under ``check_criteria: every_turn | both`` (None: none, or not known)."""
        if self.settings.check_criteria == "end_of_dialog":
            return None
        check = self.check_criteria(turns, self.messages)
        self.check_usages.extend(check.judge_usage)
        self.last_check = check.results
        return check.passed

    def _hear_user(self) -> tuple[str, bool]:
        """The simulated user's next message without the stop token (recorded unless empty), and whether it had
        the token; raises what the user raised."""
        started = time.time()
        utterance = self.user.next_message(self.messages)
        self.simulator_usages.append(utterance.usage)
        text = utterance.text.replace(self.settings.stop_token, "").strip()
        if text:
            self.messages.append(
                DialogMessage(
                    turn=self.turns + 1,
                    role="user",
                    text=redact(text),
                    input_tokens=utterance.usage.input_tokens,
                    output_tokens=utterance.usage.output_tokens,
                    started_at=started,
                    ended_at=time.time(),
                )
            )
        return text, self.settings.stop_token in utterance.text

    def _ask_user(self, output: AgentOutput) -> str | None:
        """The user's next message; None when the dialog ends here (the stop token, a failure, the task's time)."""
        try:
            text, ended = self._hear_user()
        except TaskTimeUp:
            self._out_of_time(output)
            return None
        except Exception as exc:  # the dialog ends; the task is still scored on what the agent did
            log.warning("the simulated user failed: %s", exc)
            self._user_failed(redact(f"the simulated user failed, the dialog ended: {type(exc).__name__}: {exc}"))
            return None
        if ended:
            self.stop_reason = "stop_token"
            return None
        if not text:
            self._user_failed("the simulated user sent an empty message; the dialog ended")
            return None
        return text

    def _user_failed(self, warning: str | None = None) -> None:
        """A simulator call that raised or said nothing: counted, and the dialog ends in error."""
        self.simulator_failures += 1
        self.stop_reason = "error"
        if warning is not None:
            self.warnings.append(warning)

    def _out_of_time(self, output: AgentOutput) -> None:
        """The task's time ran out between exchanges: the dialog ends as the agent's own task_timeout ends it, the
        evaluation TIMEOUT (the agent concludes with the output as this leaves it)."""
        output.stop_reason, output.final_status = "task_timeout", "TIMEOUT"
        output.error = "run_limits.task_timeout reached"  # (as the agents say it)
        self.stop_reason = "run_limit_exceeded"

    def _record_agent(self, output: AgentOutput) -> None:
        """The agent's reply in the exchange: the text of its turns since the last one."""
        start, self.seen = self.seen, len(output.turns)
        turns = output.turns[start:]
        text = "\n\n".join(t.text for t in turns if t.text) or NO_TEXT
        usage = TokenUsage.of_turns(turns) or TokenUsage()
        self.messages.append(
            DialogMessage(
                turn=self.turns + 1,
                role="agent",
                text=redact(text),
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                exchange_start=start,
            )
        )

    def finish(self, output: AgentOutput) -> None:
        """After the agent returned: an exchange it cut short (a run_limits stop or an error) ends the dialog. A
        reply that came whole before the stop (its last turn words alone) was delivered: the exchange is complete.
        Else the words the agent said are recorded, and nothing when it said none: no made-up reply."""
        if self.stop_reason is not None:
            return
        if output.stop_reason == "max_turns" and len(output.turns) > self.seen:
            self.after_exchange(output)  # ended at its cap, the exchange is whole: checked, then the precedence
            return
        self.last_check = []  # the exchange the agent cut short was not checked
        cut = output.turns[self.seen :]
        if any(t.text for t in cut):
            self._record_agent(output)
        if final_reply(cut, cut_short=True) is not None:  # its reply came whole before the stop
            self.turns += 1
        self.stop_reason = AGENT_STOPS.get(output.stop_reason, "run_limit_exceeded")

    def info(self, replicate: int) -> SimulationInfo:
        return SimulationInfo(
            replicate_index=replicate,
            n_trials=self.settings.n_trials,
            turns=self.turns,
            stop_reason=self.stop_reason,
            simulator_input_tokens=sum(usage.input_tokens for usage in self.simulator_usages),
            simulator_output_tokens=sum(usage.output_tokens for usage in self.simulator_usages),
            simulator_failures=self.simulator_failures,
            simulator_model=self.user.model,
        )
