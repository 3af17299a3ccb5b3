"""The judges' records through the installed CLI: a short reference, a score past a float, a managed SDK option, the
secrets of every prompt block, and the judge agent's turn_timeout.

The agent is replayed (no model call of its own): every request the scripted server records is a judge's.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..support.fake_anthropic import Script, Turn
from ..support.helpers import write_task
from .conftest import SystemCli, anthropic_environment, new_key, replay_task_file

pytestmark = pytest.mark.slow

REMOVED = "[reference removed]"
HASH = re.compile(r"sha256:[0-9a-f]{64}")
HUGE = 10**400  # an integer no float holds
LLM = {"type": "llm_judge", "description": "llm", "prompt": "Grade it 0 to 10."}
AGENT = {"type": "agent_judge", "description": "agent", "prompt": "Grade it 0 to 10.", "max_turns": 5}


def test_a_one_character_reference_leaves_the_judges_records_whole_and_a_rescore_reuses_them_without_a_key(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """``reference: {code: "0"}`` rewrote every 0 of the hashes, the transcript's name and the degraded note; the
    rescore then found no verdict to reuse and, without a key, overwrote it with an error."""
    fake = scripted_anthropic(
        Script(
            [Turn(text='{"score": 0.8, "rationale": "10 of 10"}')],
            verdict={"score": 0.9, "rationale": "10 of 10"},
        )
    )
    judges = [
        {**LLM, "include_reference": True, "include_dialog": True, "max_dialog_chars": 10},
        {**AGENT, "include_reference": True},
    ]
    task = replay_task_file(
        tmp_path / "tasks", "short", [{"text": "done"}], reference={"code": "0"}, success_criteria=judges
    )
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code == 0, outcome.output
    calls = len(fake.script.requests)
    criteria = run.result("short")["success_criteria_results"]
    assert [c["transcript_path"] for c in criteria] == ["judge-0.yaml", "judge-1.yaml"]
    evaluation = run.evaluation("short")
    assert all((evaluation / c["transcript_path"]).is_file() for c in criteria)
    evidence = [c["evidence"] for c in criteria]
    assert all(HASH.fullmatch(e["input_hash"]) for e in evidence), evidence
    assert HASH.fullmatch(evidence[1]["sandbox_hash"]), evidence[1]
    assert evidence[0]["degraded"] == ["dialog: 1 trailing message(s) dropped (max_dialog_chars=10)"]
    assert [e["rationale"] for e in evidence] == ["10 of 10", "10 of 10"]  # a "0" anywhere is no leak
    assert REMOVED not in (evaluation / "task.json").read_text(encoding="utf-8")
    assert "judge transcript (judge-0.yaml)" in (evaluation / "task.html").read_text(encoding="utf-8")
    # the section that shows the reference is removed from the transcript, however short the reference
    transcript = yaml.safe_load((evaluation / "judge-0.yaml").read_text(encoding="utf-8"))
    assert f"(from the task author; never shown to the agent)\n{REMOVED}\n" in transcript["judge_prompt"]
    assert REMOVED not in transcript["model"]

    rescored = system_cli("rescore", run.path, env={})  # no key: the unchanged verdicts are reused, nothing called
    assert rescored.code == 0, rescored.output
    assert len(fake.script.requests) == calls
    again = run.result("short")["success_criteria_results"]
    assert [(c["score"], c["error"], c["evidence"]["reused"]) for c in again] == [(0.9, None, True), (0.8, None, True)]


def test_a_score_no_float_holds_scores_0_as_not_finite_and_keeps_the_calls_spend_and_transcript(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """A 400-digit integer score ended both judges as ``OverflowError``: no evidence, no spend, no transcript."""
    fake = scripted_anthropic(
        Script([Turn(text=f'{{"score": {HUGE}, "rationale": "r"}}')], verdict={"score": HUGE, "rationale": "r"})
    )
    task = replay_task_file(tmp_path / "tasks", "huge", [{"text": "done"}], success_criteria=[LLM, AGENT])
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code == 1, outcome.output
    criteria = run.result("huge")["success_criteria_results"]
    shown = f"the verdict's score {str(HUGE)[:20]}"
    for result in criteria:
        assert result["score"] == 0.0 and result["error"].startswith(shown), result["error"]
        assert result["error"].endswith("is not finite") and len(result["error"]) < 200, result["error"]
        assert result["evaluation_status"] == "evaluated"  # the judge answered: a judged 0, not an outage
        assert result["token_usage"]["uncached_input_tokens"] > 0 and result["evidence"]["judge_usage"]["cost_usd"] > 0
        assert (run.evaluation("huge") / result["transcript_path"]).is_file()


def test_sdk_options_tools_on_a_judge_is_refused_at_load_and_honoured_on_the_agent(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """The judge's tools are its allowed_tools less its disallowed_tools: ``sdk_options.tools`` was silently
    ignored there, as is ``strict_mcp_config`` (always on); the claude-code agent itself takes both."""
    refused = {"tools": ["Bash", "Write", "Edit"], "strict_mcp_config": False}
    instead = {"tools": "set the judge's allowed_tools / disallowed_tools", "strict_mcp_config": "never loads an MCP"}
    for key, value in refused.items():
        judge = {**AGENT, "agent": {"sdk_options": {key: value}}}
        task = replay_task_file(tmp_path / key, "judged", [{"text": "done"}], success_criteria=[judge])
        said = system_cli.invalid(task).output
        assert f"agent.sdk_options.{key}: managed by coder-eval for agent_judge" in said, said
        assert instead[key] in said, said
    agent = {
        "type": "claude-code",
        "model": "claude-test",
        "sdk_options": {"tools": ["Bash"], "strict_mcp_config": False},
    }
    honoured = write_task(
        tmp_path / "agent",
        {"task_id": "a", "description": "a", "initial_prompt": "p", "agent": agent, "success_criteria": [LLM]},
    )
    valid = system_cli("validate", honoured, env={})
    assert valid.code == 0, valid.output


def test_every_block_of_a_judges_prompt_has_the_callers_secrets_redacted(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """A caller's secret the agent wrote into a file reached the judge API verbatim through ``files``, though the
    agent output block showed ``***``."""
    secret = f"pw-{secrets.token_hex(12)}"
    fake = scripted_anthropic(Script([], verdict={"score": 0.9, "rationale": "r"}))
    turns = [{"calls": [{"tool": "Write", "path": "creds.txt", "content": f"{secret}\n"}], "text": f"set {secret}"}]
    judge = {**LLM, "files": ["creds.txt"], "include_agent_output": True, "include_tool_calls": True}
    task = replay_task_file(tmp_path / "tasks", "creds", turns, success_criteria=[judge])
    env = {**anthropic_environment(fake.url, new_key()), "MY_DB_PASSWORD": secret}
    outcome, _ = system_cli.run(task, env=env)

    assert outcome.code == 0, outcome.output
    (request,) = fake.script.requests
    prompt = request["messages"][0]["content"]
    assert secret not in str(fake.script.requests) and "### creds.txt\n***" in prompt, prompt


def test_an_agent_judge_past_its_turn_timeout_ends_near_it_not_the_sdks_grace_later(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """A judge's session is thrown away: its CLI is ended at turn_timeout, not given the SDK's 5 s to save it (a
    turn_timeout of 5 took 10.9 s)."""
    fake = scripted_anthropic(Script([Turn(tools=[("Bash", {"command": "tail -f /dev/null"})])]))
    judge = {**AGENT, "turn_timeout": 10}
    task = replay_task_file(tmp_path / "tasks", "slow", [{"text": "done"}], success_criteria=[judge])
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code == 1, outcome.output
    (result,) = run.result("slow")["success_criteria_results"]
    assert result["error"] == "the judge agent exceeded turn_timeout (10 s)"
    # past its 10 s, the judge's start (its namespace, its HOME; up to 3 s loaded) and its CLI's end: not the SDK's
    # 5 s grace again
    assert 10 <= result["evidence"]["judge_usage"]["duration_s"] < 14.9, result["evidence"]["judge_usage"]
