"""Agent types that keep none of their duties, for tests/system/test_plugin_agent_limits.py: installed beside the
echo plugin (tests/support/agent_plugin) as a package of their own, found through the entry-point group only.

An agent the harness must stop shortens the harness's grace past ``run_limits.task_timeout``
(``evaluation.AGENT_GRACE_S``) as its type is loaded, in the harness's process: the format's least task_timeout is
30 s and the grace 30 s more, so it is stopped ``STOP_AFTER_S`` in rather than a minute. (Not on import: the tests
import the module for its constants.)
"""

from __future__ import annotations

import asyncio
import threading
import time

from coder_eval_dagster.core import evaluation
from coder_eval_dagster.core.agents.base import AgentInput, AgentOutput
from coder_eval_dagster.core.models.results import ToolCallRecord, ToolCallStatus, TurnRecord

TASK_TIMEOUT_S = 30  # what the tasks set: the format's least
STOP_AFTER_S = 2
HANG_S = 60  # how long each blocking call would hold the agent


class Overdue:
    """An agent the harness must stop, made as its type is loaded (before the harness sets its deadline)."""

    def __init__(self) -> None:
        evaluation.AGENT_GRACE_S = STOP_AFTER_S - TASK_TIMEOUT_S


class HangAgent(Overdue):
    """Blocked in a sandbox command long past its time: writes ``late`` to hang.txt if ever let finish it."""

    async def run(self, agent_input: AgentInput) -> AgentOutput:
        command = f"echo started > hang.txt; sleep {HANG_S}; echo late >> hang.txt"
        await asyncio.to_thread(agent_input.sandbox.run, command, 400)
        return AgentOutput(turns=[TurnRecord(index=1, text="hang done")])


class SleepAgent(Overdue):
    """Blocked in a call of its own thread, no command the harness could end."""

    async def run(self, agent_input: AgentInput) -> AgentOutput:
        await asyncio.to_thread(time.sleep, HANG_S)
        return AgentOutput(turns=[TurnRecord(index=1, text="slept")])


class BusyAgent:
    """Five Bash calls in one turn, whatever run_limits.max_tool_calls says; the first writes echo.txt."""

    async def run(self, agent_input: AgentInput) -> AgentOutput:
        commands = [f"printf %s '{agent_input.prompt}' > echo.txt", *(f"echo {n}" for n in range(2, 6))]
        calls = []
        for seq, command in enumerate(commands, start=1):
            done = await asyncio.to_thread(agent_input.sandbox.run, command, 60)
            parameters = {"command": command}
            status: ToolCallStatus = "success" if done.ok else "error"
            calls.append(ToolCallRecord(turn=1, seq=seq, tool="Bash", parameters=parameters, status=status))
        return AgentOutput(turns=[TurnRecord(index=1, calls=calls, text="done")])


class SyncAgent:
    """A ``run`` that is no coroutine function: it would write ran.txt if the harness called it."""

    def run(self, agent_input: AgentInput) -> AgentOutput:
        agent_input.sandbox.run("echo ran > ran.txt", 60)
        return AgentOutput(turns=[TurnRecord(index=1, text="ran")])


class LingerAgent:
    """Leaves a thread of its own behind, appending a line to late.txt every ``LINGER_EVERY_S`` for as long as the
    sandbox lets it; returns once the thread has written its first line."""

    async def run(self, agent_input: AgentInput) -> AgentOutput:
        first = threading.Event()
        threading.Thread(target=linger, args=(agent_input, first), daemon=True).start()
        await asyncio.to_thread(first.wait, 30)
        return AgentOutput(turns=[TurnRecord(index=1, text="lingering")])


LINGER_EVERY_S = 0.05


def linger(agent_input: AgentInput, first: threading.Event) -> None:
    run = agent_input.sandbox.run  # (a method taken while the phase lasts)
    for _ in range(int(60 / LINGER_EVERY_S)):
        run("echo line >> late.txt", 10)
        first.set()
        time.sleep(LINGER_EVERY_S)
