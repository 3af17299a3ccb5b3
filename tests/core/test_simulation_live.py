"""Dialogs for real: claude-agent-sdk + its bundled CLI and the codex SDK, the simulated user on the anthropic SDK,
all against scripted APIs on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import pytest

from coder_eval_dagster.core.models.results import EvaluationResult

from ..support.fake_anthropic import Script, Turn
from ..support.fake_http import serving
from ..support.fake_openai import FakeResponses, ResponsesScript, Step
from ..support.helpers import criterion, evaluate_task

pytestmark = pytest.mark.slow
REFERENCE = "REFERENCE-SOLUTION-5d1e"
PERSONA = "Bea, a product owner who answers in one line"
GOAL = "a file out.txt that says done"
VERDICT = {"score": 1.0, "rationale": "asked first"}


def dialog(tmp_path, agent: dict[str, Any], criteria=None, **simulation: Any) -> EvaluationResult:
    data = {
        "task_id": "t",
        "description": "d",
        "initial_prompt": "Start the file please",
        "sandbox": {"python": None},
        "agent": agent,
        "reference": {"code": REFERENCE},
        "simulation": {"enabled": True, "persona": PERSONA, "goal": GOAL, **simulation},
        "success_criteria": criteria or [criterion("file_exists", path="out.txt")],
    }
    return evaluate_task(tmp_path, data)


CLAUDE = {"type": "claude-code", "permission_mode": "bypassPermissions", "model": "claude-test"}
# Exchange 1: a tool call, then a question; exchange 2: the file, then a report; exchange 3: a closing remark.
EXCHANGES = [
    Turn(tools=[("Bash", {"command": "echo start > notes.txt"})], input_tokens=300, output_tokens=40),
    Turn(text="Started. What should out.txt say?", input_tokens=400, output_tokens=20),
    Turn(tools=[("Bash", {"command": "echo done > out.txt"})], input_tokens=500, output_tokens=30),
    Turn(text="out.txt says done.", input_tokens=600, output_tokens=10),
    Turn(text="Anything else?", input_tokens=700, output_tokens=10),
]


def claude_dialog(tmp_path, api, replies: list[str], criteria=None, **simulation: Any):
    fake = api(Script(list(EXCHANGES), user_replies=replies))
    return dialog(tmp_path, CLAUDE, criteria, **simulation), fake.script


def everything_sent(script: Script) -> str:
    return json.dumps(script.requests)


def test_stop_token_continued_session_toolless_simulator_judge_and_hidden_reference(tmp_path, api):
    judge = criterion("llm_judge", prompt="Did the agent ask before writing?", include_dialog=True)
    fake = api(
        Script(list(EXCHANGES), user_replies=["It should say done.", "Great, thanks <<<END>>>"], verdict=VERDICT)
    )
    result = dialog(tmp_path, CLAUDE, [criterion("file_exists", path="out.txt"), judge])
    script = fake.script
    assert result.final_status == "SUCCESS", (result.error, result.criteria)
    assert (result.simulation.turns, result.simulation.stop_reason) == (2, "stop_token")
    assert [(m.role, m.text) for m in result.dialog] == [
        ("user", "Start the file please"),
        ("agent", "Started. What should out.txt say?"),
        ("user", "It should say done."),
        ("agent", "out.txt says done."),
        ("user", "Great, thanks"),
    ]
    # the agent's session is continued: its request in exchange 2 holds exchange 1
    second = json.dumps(next(r for r in script.agent_requests() if "It should say done." in json.dumps(r)))
    assert "Start the file please" in second and "Started. What should out.txt say?" in second
    assert "echo start > notes.txt" in second
    simulator = script.simulator_requests()
    assert len(simulator) == 2 and all("tools" not in r and "tool_choice" not in r for r in simulator)
    assert PERSONA in simulator[0]["system"] and GOAL in simulator[0]["system"]
    assert "Started. What should out.txt say?" in simulator[0]["messages"][0]["content"]
    assert REFERENCE not in everything_sent(script)
    (graded,) = [r for r in script.requests if r.get("tool_choice")]
    shown = graded["messages"][0]["content"]
    assert "UNTRUSTED DATA" in shown and ": dialog. It comes from" in shown and "may invent premises" in shown
    assert shown.index("[user] It should say done.") < shown.index("[agent] out.txt says done.")
    assert "[user] Great, thanks" in shown
    assert (result.simulator_input_tokens, result.simulator_output_tokens) == (100, 20)
    assert result.dialog[1].tokens == 760 and result.total_cost_usd is not None and result.total_cost_usd > 0


def test_criteria_pass_ends_before_the_simulator_is_asked(tmp_path, api):
    result, script = claude_dialog(
        tmp_path,
        api,
        ["It should say done."],
        [criterion("file_exists", path="notes.txt")],
        stop_on_criteria_pass=True,
        check_criteria="every_turn",
    )
    assert (result.simulation.turns, result.simulation.stop_reason) == (1, "criteria_passed")
    assert script.simulator_requests() == [] and result.final_status == "SUCCESS"


def test_max_turns_asks_the_simulator_one_time_fewer_than_exchanges(tmp_path, api):
    result, script = claude_dialog(tmp_path, api, ["It should say done.", "And?"], max_turns=2)
    assert (result.simulation.turns, result.simulation.stop_reason) == (2, "max_turns")
    assert len(script.simulator_requests()) == 1 and result.final_status == "SUCCESS"


def test_the_dialog_budget_counts_simulator_and_agent(tmp_path, api):
    # exchange 1: 760 agent tokens; the simulator's 60 bring exchange 2's total past 1500
    result, script = claude_dialog(tmp_path, api, ["It should say done.", "And?"], max_total_tokens=1500)
    assert (result.simulation.turns, result.simulation.stop_reason) == (2, "budget")
    assert len(script.simulator_requests()) == 1 and result.final_status == "SUCCESS"


def test_a_failing_simulator_ends_the_dialog_and_the_task_is_scored(tmp_path, api):
    fake = api(Script(list(EXCHANGES), simulator_status=500))
    result = dialog(tmp_path, CLAUDE, [criterion("file_exists", path="notes.txt")])
    assert (result.simulation.turns, result.simulation.stop_reason) == (1, "error")
    assert result.final_status == "SUCCESS" and result.criteria[0].passed
    assert any("simulated user failed" in w for w in result.warnings)
    assert len(fake.script.simulator_requests()) == 4  # the SDK's bounded retries


def test_an_agent_that_fails_in_an_exchange_gave_no_reply(tmp_path, api, monkeypatch):
    """Exchange 2's model call fails: the dialog ends in error, and no empty agent reply is made up for it."""
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    api(Script(list(EXCHANGES), user_replies=["It should say done."], fail_from_turn=2, fail_status=400))
    result = dialog(tmp_path, CLAUDE, [criterion("file_exists", path="notes.txt")])
    assert result.final_status == "ERROR" and result.simulation.stop_reason == "error"
    roles = [(message.role, message.text) for message in result.dialog]
    assert roles == [
        ("user", "Start the file please"),
        ("agent", "Started. What should out.txt say?"),
        ("user", "It should say done."),
    ]


def test_run_limits_apply_across_the_whole_dialog(tmp_path, api):
    api(Script(list(EXCHANGES), user_replies=["It should say done.", "And?"]))
    result = evaluate_task(
        tmp_path,
        {
            "task_id": "t",
            "description": "d",
            "initial_prompt": "Start the file please",
            "sandbox": {"python": None},
            "agent": CLAUDE,
            "simulation": {"enabled": True, "persona": PERSONA, "goal": GOAL},
            "run_limits": {"max_output_tokens": 80},
            "success_criteria": [criterion("file_exists", path="notes.txt")],
        },
    )
    assert result.final_status == "TOKEN_BUDGET_EXCEEDED"
    assert (result.simulation.turns, result.simulation.stop_reason) == (1, "run_limit_exceeded")


# ----------------------------------------------------------------------------- codex


@pytest.fixture
def codex_api(monkeypatch: pytest.MonkeyPatch):
    """The scripted Responses API for the codex agent (beside the Messages API the simulated user talks to)."""
    pytest.importorskip("openai_codex", reason="the codex extra is not installed")
    from ..support.fake_openai import codex_environment

    yield from serving(monkeypatch, FakeResponses, codex_environment)


def test_codex_dialog_continues_its_thread(tmp_path, api, codex_api):
    anthropic = api(Script([], user_replies=["It should say done.", "<<<END>>>"]))
    codex = codex_api(
        ResponsesScript(
            [
                Step(commands=["echo start > notes.txt"]),
                Step(text="Started. What should out.txt say?"),
                Step(commands=["echo done > out.txt"]),
                Step(text="out.txt says done."),
            ]
        )
    )
    result = dialog(tmp_path, {"type": "codex", "model": "gpt-fake"})
    assert result.final_status == "SUCCESS", (result.error, result.criteria)
    assert (result.simulation.turns, result.simulation.stop_reason) == (2, "stop_token")
    assert [m.text for m in result.dialog if m.role == "agent"] == [
        "Started. What should out.txt say?",
        "out.txt says done.",
    ]
    later = json.dumps(next(r for r in codex.script.requests if "It should say done." in json.dumps(r)))
    assert "Start the file please" in later and "Started. What should out.txt say?" in later
    assert REFERENCE not in json.dumps(codex.script.requests) + everything_sent(anthropic.script)
    assert len(anthropic.script.simulator_requests()) == 2
