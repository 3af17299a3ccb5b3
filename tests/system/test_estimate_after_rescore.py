"""The forecast after a rescore reused the judges' verdicts, through the installed CLI.

A rescore that reuses every verdict pays no judge, so the run's task_results
row says its judges cost $0; the next run calls them again. ``--estimate``
must forecast the judges at what they cost when they were called, not at
the rescore's $0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..support.fake_anthropic import Script
from ..support.helpers import criterion
from .conftest import SystemCli, anthropic_environment, new_key, replay_task_file

pytestmark = pytest.mark.slow

TURN = {
    "usage": {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.03},
    "calls": [{"tool": "Write", "path": "a.txt", "content": "done\n"}],
    "text": "wrote a.txt",
}
JUDGES = [
    criterion("llm_judge", prompt="1.0 if a.txt says done", files=["a.txt"]),
    criterion("llm_judge", prompt="1.0 if the agent says what it wrote", include_agent_output=True),
]


def test_the_judges_forecast_after_a_rescore_that_reused_them_is_what_they_cost_when_called(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    fake = scripted_anthropic(Script([], verdict={"score": 1.0, "rationale": "says done"}))
    env = anthropic_environment(fake.url, new_key())
    task = replay_task_file(tmp_path / "tasks", "judged", [TURN], success_criteria=JUDGES)
    done, run = system_cli.run(task, env=env)
    assert done.code == 0, done.output
    paid = run.summary["spend"]["judges"]["total_cost_usd"]
    assert paid > 0 and len(fake.script.requests) == 2

    rescored = system_cli("rescore", run.path, env=env)
    assert rescored.code == 0, rescored.output
    assert len(fake.script.requests) == 2  # both verdicts reused: no call
    assert run.result("judged")["judge_cost_usd"] == 0.0

    estimate = system_cli("run", task, "--estimate", "--format", "json", "--runs-dir", system_cli.runs, env={})
    table = system_cli("run", task, "--estimate", "--runs-dir", system_cli.runs, env={})

    assert (estimate.code, table.code) == (0, 0), estimate.output + table.output
    expected = json.loads(estimate.out)["total"]["expected"]
    assert expected["judges_usd"] == pytest.approx(paid) and expected["unknown"] == []
    assert expected["agent_usd"] == pytest.approx(0.03)
    (total,) = [line.split() for line in table.out.splitlines() if line.startswith("total")]
    assert total[7] == f"${paid:.4f}", table.out  # the judges column
