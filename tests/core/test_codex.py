"""The codex agent for real: the openai-codex SDK and its codex binary against a scripted Responses API on 127.0.0.1."""

from __future__ import annotations

import pytest

from coder_eval_dagster.core.models.results import EvaluationResult

from ..support.fake_http import serving
from ..support.fake_openai import CODEX_KEY, FakeResponses, ResponsesScript, Step, codex_environment
from ..support.helpers import criterion, evaluate_task

pytest.importorskip("openai_codex", reason="the codex extra is not installed")


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    yield from serving(monkeypatch, FakeResponses, codex_environment)


def run(tmp_path, criteria=None, **task) -> EvaluationResult:
    data = {
        "task_id": "t",
        "description": "d",
        "initial_prompt": "do the task",
        "sandbox": {"python": None},
        "agent": {"type": "codex", "model": "gpt-fake"},
        "success_criteria": criteria or [criterion("file_exists", path="out.txt")],
        **task,
    }
    return evaluate_task(tmp_path, data)


def test_commands_usage_and_isolation(tmp_path, api):
    fake = api(
        ResponsesScript(
            [
                Step(commands=["echo hi > out.txt"]),
                Step(commands=["env > seen_env.txt; exit 3"]),
                Step(text="Done: created out.txt"),
            ]
        )
    )
    result = run(
        tmp_path,
        [
            criterion("file_exists", path="out.txt"),
            criterion("command_executed", tool_name="Bash", command_pattern="echo hi > out.txt"),
        ],
    )
    assert result.final_status == "SUCCESS", (result.error, result.criteria)
    calls = [c for t in result.trajectory for c in t.calls]
    assert [c.tool for c in calls] == ["Bash", "Bash"] and [c.status for c in calls] == ["success", "error"]
    assert result.turns == 3 and result.visible_turns == 3 and result.agent_cost_usd is None
    turn = result.trajectory[0]
    assert (turn.input_tokens, turn.cache_creation_input_tokens, turn.cache_read_input_tokens, turn.output_tokens) == (
        0,
        150,
        50,
        30,
    )
    seen = (tmp_path / "run/default/t/01/sandbox/seen_env.txt").read_text()
    assert "caller-secret-value-42" not in seen and "CODEX_HOME=/tmp/coder-eval-codex-" in seen
    assert CODEX_KEY not in result.model_dump_json()
    assert fake.script.paths and all(p == "/v1/responses" for p in fake.script.paths), fake.script.paths


def test_input_budget_counts_fresh_prompt_as_cache_creation(tmp_path, api):
    steps = [Step(commands=[f"echo {i} >> log.txt"]) for i in range(4)]
    api(ResponsesScript(steps))
    free = run(tmp_path / "a", run_limits={"max_input_tokens": 200})
    assert free.final_status != "TOKEN_BUDGET_EXCEEDED"  # the default counts no cache creation: output-only cap
    capped = run(tmp_path / "b", run_limits={"max_input_tokens": 200, "count_cache_creation": True})
    assert capped.final_status == "TOKEN_BUDGET_EXCEEDED"
    assert (tmp_path / "b/run/default/t/01/sandbox/log.txt").read_text().split() == ["0", "1"]


def test_early_stop_interrupts_the_turn(tmp_path, api):
    fake = api(
        ResponsesScript(
            [
                Step(commands=["echo a > out.txt"]),
                Step(commands=["git push --force"]),
                Step(commands=["touch late.txt"]),
            ]
        )
    )
    guard = {**criterion("command_executed", command_pattern="git push", min_count=0, max_count=0), "stop_early": {}}
    result = run(tmp_path, [guard], run_limits={"max_turns": 10})
    assert result.stopped_early and result.early_stop_reason == "criterion_failed" and result.final_status == "FAILURE"
    assert not (tmp_path / "run/default/t/01/sandbox/late.txt").exists()
    assert len(fake.script.requests) <= 3


def test_api_error_and_missing_key_are_errors(tmp_path, api, monkeypatch):
    api(ResponsesScript([], status=400))
    result = run(tmp_path / "a")
    assert result.final_status == "ERROR" and result.error
    monkeypatch.delenv("CODEX_API_KEY")
    result = run(tmp_path / "b")
    assert result.final_status == "ERROR" and "CODEX_API_KEY" in result.error
