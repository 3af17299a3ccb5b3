"""The harness's hold on an agent that does not stop itself (core/evaluation.py, ``supervised``)."""

from __future__ import annotations

import asyncio
import time

import pytest

from coder_eval_dagster.core import evaluation
from coder_eval_dagster.core.agents.base import AgentOutput
from coder_eval_dagster.core.models.limits import RunLimits
from coder_eval_dagster.core.sandbox.process import Interrupt


async def stuck() -> AgentOutput:
    await asyncio.sleep(3600)
    return AgentOutput()


def test_an_agent_past_its_task_timeout_and_the_grace_is_stopped_as_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evaluation, "AGENT_GRACE_S", 0.2)
    limits = RunLimits.model_construct(task_timeout=0.3)  # (the format's least is 30 s)
    started = time.monotonic()
    output = asyncio.run(evaluation.supervised(stuck(), limits, Interrupt()))
    assert time.monotonic() - started < 3
    assert (output.final_status, output.stop_reason) == ("TIMEOUT", "task_timeout")
    assert output.error is not None and "did not stop at run_limits.task_timeout" in output.error


def test_an_agent_that_stops_itself_is_left_alone() -> None:
    async def quick() -> AgentOutput:
        return AgentOutput(final_text="done")

    output = asyncio.run(evaluation.supervised(quick(), RunLimits(), Interrupt()))
    assert (output.final_status, output.final_text) == (None, "done")
