"""The judges' replies and requests through the installed CLI, on a replayed agent (only the judges call the model):
an agent judge's verdict is a top-level JSON object of its final message, never one nested in it; an llm_judge sends
its temperature on both backends; a 200 reply that is JSON but no message is a judge outage left out of the suite
metrics; both judges ask for findings, which the result keeps.

The core's cases (each parse, each odd body) are in tests/core/test_judge_replies.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..core.test_judge_replies import FINDINGS, OddAnthropic, OddScript
from ..support.fake_anthropic import Script, Turn
from .conftest import SystemCli, anthropic_environment, bedrock_environment, new_key, replay_task_file

pytestmark = pytest.mark.slow

WROTE = [{"calls": [{"tool": "Write", "path": "main.py", "content": "print('hi')\n"}], "text": "wrote main.py"}]


def criteria(run: Any, task_id: str) -> list[dict[str, Any]]:
    return run.result(task_id)["success_criteria_results"]


@pytest.mark.parametrize(
    ("final", "score", "error"),
    [
        ({"score": 0.2, "rationale": "tests fail", "checks": {"syntax": {"score": 1.0}}}, 0.2, None),
        ({"checks": [{"name": "syntax", "score": 1.0}, {"name": "tests", "score": 0.0}], "score": 0.3}, 0.3, None),
        ({"verdict": {"score": 0.9, "rationale": "wrapped"}}, 0.0, "the verdict has no score"),
    ],
)
def test_an_agent_judge_is_scored_by_its_verdicts_own_score_not_a_nested_one(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any, final: dict[str, Any], score: float, error: str
) -> None:
    """A verdict reporting its checks' scores scored the last nested one (1.0 passed a failing task); a score only
    inside a wrapper is none, as in coder_eval, which reads top-level objects only. Its findings are asked for and
    kept."""
    verdict = {**final, "findings": FINDINGS}
    fake = scripted_anthropic(Script([Turn(text=f"Checked.\n```json\n{json.dumps(verdict)}\n```")]))
    judge = {"type": "agent_judge", "description": "agent", "prompt": "Run main.py and grade it.", "max_turns": 3}
    task = replay_task_file(tmp_path / "tasks", "nested", WROTE, success_criteria=[judge])
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code == 1, outcome.output  # below the 0.7 threshold: the task fails
    (criterion,) = criteria(run, "nested")
    assert (criterion["score"], criterion["passed"], criterion["error"]) == (score, False, error)
    assert criterion["evaluation_status"] == "evaluated"
    asked = [json.dumps(body["messages"]) for body in fake.script.agent_requests()]
    assert asked and all('\\"findings\\": [' in prompt for prompt in asked)  # the closing instruction names them
    if error is None:
        assert criterion["findings"] == FINDINGS


def test_an_llm_judges_temperature_and_findings_on_the_direct_api(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    fake = scripted_anthropic(Script([], verdict={"score": 0.9, "rationale": "prints hi", "findings": FINDINGS}))
    judges = [
        {"type": "llm_judge", "description": "default", "prompt": "1.0 if main.py prints hi.", "files": ["main.py"]},
        {"type": "llm_judge", "description": "warm", "prompt": "1.0 if main.py prints hi.", "temperature": 0.6},
    ]
    task = replay_task_file(tmp_path / "tasks", "direct", WROTE, success_criteria=judges)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code == 0, outcome.output
    requests = [body for body in fake.script.requests if body.get("tool_choice")]
    assert sorted(body["temperature"] for body in requests) == [0.0, 0.6]
    assert all("findings" in body["tools"][0]["input_schema"]["properties"] for body in requests)
    assert [(c["score"], c["findings"]) for c in criteria(run, "direct")] == [(0.9, FINDINGS)] * 2


def test_an_llm_judges_temperature_on_bedrock(tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any) -> None:
    fake = scripted_anthropic(Script([], verdict={"score": 0.9, "rationale": "prints hi"}))
    judge = {"type": "llm_judge", "description": "llm", "prompt": "1.0 if main.py prints hi.", "temperature": 0.25}
    task = replay_task_file(tmp_path / "tasks", "bedrock", WROTE, success_criteria=[judge])
    outcome, run = system_cli.run(task, "-b", "bedrock", env=bedrock_environment(fake.url, new_key("bedrock-")))

    assert outcome.code == 0, outcome.output
    (request,) = fake.script.requests
    assert fake.script.paths.count("/model/us.anthropic.claude-sonnet-4-6/invoke") == 1, fake.script.paths
    assert (request["temperature"], request["anthropic_version"]) == (0.25, "bedrock-2023-05-31")
    assert [c["score"] for c in criteria(run, "bedrock")] == [0.9]


def test_a_reply_that_is_json_but_no_message_is_an_outage_left_out_of_the_suite_metrics(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """Of four rows, the first judge call gets ``{"foo": 1}`` with a 200: that row's judge failed (it was a judged 0
    with a TypeError, pulling the mean to 0.75), so the mean is over the three judged rows, as for a body that is no
    JSON at all."""
    script = OddScript([], verdict={"score": 1.0, "rationale": "ok"}, bodies=[b'{"foo": 1}'])
    with OddAnthropic(script) as url:
        judge = {"type": "llm_judge", "description": "llm", "prompt": "1.0 if main.py prints hi."}
        task = replay_task_file(
            tmp_path / "tasks",
            "judged",
            WROTE,
            dataset={"rows": [{"id": f"r{n}"} for n in range(4)]},
            success_criteria=[judge | {"suite_thresholds": {"mean": 0.9}}],
        )
        outcome, run = system_cli.run(task, "--judge-concurrency", "1", env=anthropic_environment(url, new_key()))

    assert outcome.code == 1, outcome.output  # the failed row's 0 fails that row
    results = [criterion for n in range(4) for criterion in criteria(run, f"judged/r{n}")]
    (failed,) = [criterion for criterion in results if criterion["error"]]
    assert failed["error"] == "judge call failed: NotAMessage: the reply is not a message: '{\"foo\": 1}'"
    assert (failed["score"], failed["evaluation_status"]) == (0.0, "not_evaluated")
    assert failed["evidence"]["judge_usage"]["input_tokens"] == 0  # its spend is said, as for any failed call
    assert sorted(criterion["evaluation_status"] for criterion in results) == ["evaluated"] * 3 + ["not_evaluated"]
    (entry,) = run.summary["suite"]
    assert (entry["metrics"]["mean"], entry["metrics"]["completion_rate"]) == (1.0, 0.75)


def test_a_score_quoting_the_key_is_redacted_before_it_is_cut(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """The error quotes a non-number score cut at 40 characters: cut first, the key was no longer the value redaction
    looks for, and its first 19 characters reached task.json."""
    key = new_key()
    fake = scripted_anthropic(Script([], verdict={"score": f"JUDGE-SCORE {key}", "rationale": "r"}))
    judge = {"type": "llm_judge", "description": "llm", "prompt": "1.0 if main.py prints hi."}
    task = replay_task_file(tmp_path / "tasks", "leak", WROTE, success_criteria=[judge])
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, key))

    (criterion,) = criteria(run, "leak")
    assert "is not a number" in criterion["error"], criterion["error"]
    assert key[:12] not in (run.evaluation("leak") / "task.json").read_text()
    assert key[:12] not in outcome.output
