"""The `echo` agent: writes its prompt to echo.txt with one shell command in the sandbox, as one turn.

An agent type as a plugin writes one: a class (or module) with ``async def
run(agent_input) -> AgentOutput``, honouring the limits and the early-stop
watcher, recording its turns and calls.
"""

from __future__ import annotations

import asyncio
import shlex

from coder_eval_dagster.core.agents.base import AgentInput, AgentOutput
from coder_eval_dagster.core.limits import BudgetTracker
from coder_eval_dagster.core.models.results import ToolCallRecord, TurnRecord

DEFAULT_TIMEOUT_S = 60.0


class EchoAgent:
    async def run(self, agent_input: AgentInput) -> AgentOutput:
        prompt = agent_input.prompt or ""
        command = f"printf %s {shlex.quote(prompt)} > echo.txt"
        timeout = agent_input.time_limit() or DEFAULT_TIMEOUT_S
        done = await asyncio.to_thread(agent_input.sandbox.run, command, timeout)
        call = ToolCallRecord(
            turn=1,
            seq=1,
            tool="Bash",
            parameters={"command": command},
            status="success" if done.ok else "error",
            duration_ms=done.duration_s * 1000,
            output=done.stdout or None,
        )
        turn = TurnRecord(index=1, calls=[call], text=f"echoed as {agent_input.config.model}", output_tokens=1)
        turn.input_tokens = len(prompt.split())
        output, budget = AgentOutput(turns=[turn]), BudgetTracker(agent_input.limits)
        stop = agent_input.watcher.observe(call) if agent_input.watcher else None
        return output.conclude(budget, budget.add(turn), stop, agent_input.limits.max_turns)


class StuckAgent:
    """Keeps none of its duties: waits for ever (the harness must stop it at an interrupt or its task_timeout)."""

    async def run(self, agent_input: AgentInput) -> AgentOutput:
        await asyncio.sleep(3600)
        return AgentOutput()


class ChattyAgent:
    """Keeps none of its duties: 30 turns of 10,000 tokens each, whatever run_limits say."""

    async def run(self, agent_input: AgentInput) -> AgentOutput:
        turns = []
        for index in range(1, 31):
            turn = TurnRecord(index=index, calls=[], text=f"turn {index}", output_tokens=10_000)
            turn.input_tokens = 10_000
            turns.append(turn)
        return AgentOutput(turns=turns, final_text="turn 30")
