"""Cost accounting through the installed CLI against a scripted model: when max_usd could be checked (and the warning
that says it could not), a judge cut off before it counted anything, and the spend line of a run that spent nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.limits import LATE_COST_WARNING, NO_COST_WARNING

from ..support.fake_anthropic import Script, Turn
from .conftest import SystemCli, anthropic_environment, claude_code_task, new_key, replay_task_file

pytestmark = pytest.mark.slow

GATEWAY_MODEL = "acme-coder-1"  # a model nobody prices but a price file
TOOL_TURNS = 4


def costly_session() -> Script:
    """Four tool turns then a reply, each $0.30 at $3 in / $15 out per million: $0.60 after the second turn."""
    turns = [
        Turn(tools=[("Bash", {"command": f"echo {n} >> out.txt"})], input_tokens=50_000, output_tokens=10_000)
        for n in range(TOOL_TURNS)
    ]
    return Script([*turns, Turn(text="done", input_tokens=50_000, output_tokens=10_000)])


def budgeted_run(tmp_path: Path, system_cli: SystemCli, fake: Any, *options: str) -> dict[str, Any]:
    """The gateway model's task under max_usd 0.5, run with ``options``: its task.json."""
    agent = {"type": "claude-code", "permission_mode": "bypassPermissions", "model": GATEWAY_MODEL}
    limits = {"max_turns": 20, "max_usd": 0.5}
    task = claude_code_task(tmp_path / "tasks", "budgeted", agent=agent, run_limits=limits)
    outcome, run = system_cli.run(task, *options, env=anthropic_environment(fake.url, new_key()))
    assert outcome.code == 1, outcome.output
    return run.result("budgeted")


def test_max_usd_checked_on_priced_turns_stops_the_agent_with_no_warning_that_it_was_not(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """The price file prices each turn as it ends: the budget binds after the second, and the result does not say
    it went unchecked (it said "the agent reported no cost", as no turn's cost was the CLI's own)."""
    fake = scripted_anthropic(costly_session())
    prices = tmp_path / "prices.yaml"
    prices.write_text(f"models:\n  {GATEWAY_MODEL}: {{input_per_mtok: 3, output_per_mtok: 15}}\n")
    result = budgeted_run(tmp_path, system_cli, fake, "--prices", str(prices))
    assert result["final_status"] == "COST_BUDGET_EXCEEDED", (result["error_message"], fake.script.paths)
    assert len(fake.script.agent_requests()) == 2
    assert {turn["cost_source"] for turn in result["iterations"][0]["turns"]} == {"priced"}
    assert not [warning for warning in result["warnings"] if "max_usd" in warning], result["warnings"]


def test_max_usd_checked_only_when_claude_code_reports_its_cost_at_the_end_says_so(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """No price for the model: no turn has a cost until Claude Code reports the exchange's at its end, so every turn
    runs before the budget is checked; the result warns of it (its warnings were empty)."""
    fake = scripted_anthropic(costly_session())
    result = budgeted_run(tmp_path, system_cli, fake)
    assert result["final_status"] == "COST_BUDGET_EXCEEDED", (result["error_message"], fake.script.paths)
    assert len(fake.script.agent_requests()) == TOOL_TURNS + 1  # nothing stopped it
    assert LATE_COST_WARNING in result["warnings"] and NO_COST_WARNING not in result["warnings"], result["warnings"]


def test_an_agent_judge_cut_off_before_its_first_reply_makes_the_cost_a_floor(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """Its turn_timeout passed before any usage came: its cost is unknown though it counted no token, so the row's
    and the run's costs are floors (they were complete, and the total printed without its ``≥``)."""
    fake = scripted_anthropic(Script([Turn(text="late")], latency_s=60))
    judge = {"type": "agent_judge", "description": "slow", "prompt": "Inspect.", "turn_timeout": 5}
    turns = [{"usage": {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.01}, "text": "done"}]
    task = replay_task_file(tmp_path / "tasks", "cut", turns, success_criteria=[judge])
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    assert outcome.code == 1, outcome.output
    (criterion,) = run.result("cut")["success_criteria_results"]
    assert "turn_timeout" in criterion["error"]
    usage = criterion["evidence"]["judge_usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["cost_usd"], usage["cost_source"]) == (
        0,
        0,
        None,
        "unknown",
    ), usage
    summary = run.summary
    (row,) = summary["task_results"]
    assert row["cost_complete"] is False
    assert (summary["cost_complete"], summary["tasks_cost_incomplete"]) == (False, 1)
    assert (summary["spend"]["cost_complete"], summary["spend"]["judges"]["cost_source"]) == (False, "unknown")
    assert "; total ≥ $0.0100" in outcome.out, outcome.out


def test_a_run_whose_model_calls_all_failed_prints_no_spend_line(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """Nothing was spent: no ``spend`` line (it printed dashes and a $0 total); run.json's spend keeps its zeros."""
    fake = scripted_anthropic(Script([Turn(text="never")], status=500))
    task = claude_code_task(tmp_path / "tasks", "failing")
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    assert run.result("failing")["final_status"] == "ERROR", outcome.output
    assert "spend [" not in outcome.out, outcome.out
    agent = run.summary["spend"]["agent"]
    assert (agent["input_tokens"], agent["output_tokens"], agent["total_cost_usd"]) == (0, 0, 0.0), agent
