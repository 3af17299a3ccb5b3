"""What the judges make of their replies, and what they send: only a top-level JSON object of an agent judge's final
message is its verdict, an llm_judge's temperature goes in the request body, a 200 reply that is JSON but no message
is a failed call (not a judged 0), and both judges ask for findings and keep them.

The CLI's paths against the scripted API are in tests/system/test_judge_replies_cli.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core import routing
from coder_eval_dagster.core.criteria import agent_judge, llm_judge
from coder_eval_dagster.core.criteria.agent_judge import parse_verdict
from coder_eval_dagster.core.criteria.judging import VerdictError, verdict_score
from coder_eval_dagster.core.models.results import EvaluationResult

from ..support.fake_anthropic import FakeAnthropic, Script, scripted_api_environment
from ..support.fake_http import serving
from ..support.helpers import criterion, evaluate_replay

TURNS = [{"calls": [{"tool": "Write", "path": "main.py", "content": "print('hi')\n"}], "text": "wrote main.py"}]
FINDINGS = ["main.py:1 prints hi — correct", "no tests — minor gap"]


def llm(**fields: Any) -> dict[str, Any]:
    return criterion("llm_judge", prompt="Grade main.py: 1.0 if it prints hi.", **fields)


def judged(tmp_path: Path, *criteria: dict[str, Any]) -> EvaluationResult:
    return evaluate_replay(tmp_path, TURNS, success_criteria=list(criteria))


def forced(requests: list[dict[str, Any]]) -> dict[str, Any]:
    """The one llm_judge request (it forces submit_verdict)."""
    (request,) = [body for body in requests if body.get("tool_choice")]
    return request


# ----------------------------------------------------------------------------- an agent judge's final message


@pytest.mark.parametrize(
    ("text", "score"),
    [
        # a nested score (of a check, of a list of checks) is not the verdict's
        ('{"score": 0.2, "rationale": "tests fail", "checks": {"syntax": {"score": 1.0}}}', 0.2),
        ('{"checks": [{"name": "syntax", "score": 1.0}, {"name": "tests", "score": 0.0}], "score": 0.3}', 0.3),
        ('Checked.\n```json\n{"score": 0.4, "checks": {"a": {"score": 1}}}\n```\n{"ack": true}', 0.4),
        # what worked before still does: prose around it, a fenced block, the last of two verdicts, clamping
        ('Ran the tests {quickly}.\n```json\n{"score": 0.9, "rationale": "prints hi"}\n```\nDone.', 0.9),
        ('{"score": 0.1, "rationale": "draft"}\nOn reflection:\n{"score": 0.7, "rationale": "final"}', 0.7),
        ('{"score": 1.25, "rationale": "generous"}', 1.0),
        ('I read {the config}. {"score": 0.5, "rationale": "a } and a \\" in its text"}', 0.5),
    ],
)
def test_only_a_top_level_object_of_the_final_message_is_the_verdict(text: str, score: float) -> None:
    assert verdict_score(parse_verdict(text)) == score


@pytest.mark.parametrize(
    ("text", "error"),
    [
        # as coder_eval's parser, which walks top-level spans only: a score nested in a wrapper is none
        ('{"verdict": {"score": 0.9, "rationale": "wrapped"}}', "has no score"),
        ('{"checks": [{"score": 1.0}], "rationale": "forgot the score"}', "has no score"),
        ("It looks good to me.", "is not a JSON verdict"),
        ('{"score": "great"}', "is not a number"),
        # an outer object that is not JSON (a trailing comma, a message cut off) holds its checks: none is the verdict
        ('Checked.\n{"score": 0.2, "checks": [{"name": "lint", "score": 1.0},]}', "is not a JSON verdict"),
        ('{"score": 0.2, "checks": [{"name": "lint", "score": 1.0}', "is not a JSON verdict"),
    ],
)
def test_a_verdict_with_no_top_level_score_is_an_error(text: str, error: str) -> None:
    with pytest.raises(VerdictError, match=error):
        verdict_score(parse_verdict(text))


# ----------------------------------------------------------------------------- temperature


@pytest.mark.parametrize(("fields", "sent"), [({}, 0.0), ({"temperature": 0.4}, 0.4)])
def test_an_llm_judges_temperature_reaches_the_api(
    tmp_path: Path, api: Any, fields: dict[str, Any], sent: float
) -> None:
    fake = api(Script([], verdict={"score": 0.8, "rationale": "ok"}))
    (judge,) = judged(tmp_path, llm(**fields)).criteria
    assert (judge.score, judge.error) == (0.8, None)
    assert forced(fake.script.requests)["temperature"] == sent


def test_an_llm_judges_temperature_reaches_bedrock_beside_its_version(
    tmp_path: Path, api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = api(Script([], verdict={"score": 0.8, "rationale": "ok"}))
    monkeypatch.setenv("API_BACKEND", "bedrock")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-token-0123456789")
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake.url)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    (judge,) = judged(tmp_path, llm(temperature=0.3)).criteria
    assert (judge.score, judge.error) == (0.8, None)
    (request,) = fake.script.requests
    assert (request["temperature"], request["anthropic_version"]) == (0.3, routing.BEDROCK_ANTHROPIC_VERSION)


# ----------------------------------------------------------------------------- a 200 reply that is no message


@dataclass
class OddScript(Script):
    """A Script whose first replies are these raw 200 bodies, whatever was asked."""

    bodies: list[bytes] = field(default_factory=list)


class OddHandler(FakeAnthropic.handler):
    def answer(self, script: OddScript, body: dict[str, Any], bedrock: bool) -> tuple[int, bytes, str]:
        with script.lock:
            odd = script.bodies.pop(0) if script.bodies else None
        return (200, odd, "application/json") if odd is not None else super().answer(script, body, bedrock)


class OddAnthropic(FakeAnthropic):
    """The scripted Messages API, answering first with the script's raw bodies."""

    handler = OddHandler


@pytest.fixture
def odd_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[OddScript], OddAnthropic]]:
    yield from serving(monkeypatch, OddAnthropic, scripted_api_environment)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b'{"foo": 1}', "NotAMessage: the reply is not a message: '{\"foo\": 1}'"),
        (b"[1, 2]", "NotAMessage: the reply is not a message"),
        (b'{"type": "message", "content": null, "usage": null}', "NotAMessage: the reply is not a message"),
        (b'{"content": [], "usage": {"input_tokens": "many"}}', "NotAMessage: the reply's usage is not token counts"),
        (b"not json", "JSONDecodeError"),  # as it was: the same failure
    ],
)
def test_a_reply_that_is_no_message_is_a_failed_call_not_a_judged_zero(
    tmp_path: Path, odd_api: Any, body: bytes, said: str
) -> None:
    odd_api(OddScript([], verdict={"score": 0.9, "rationale": "ok"}, bodies=[body]))
    (judge,) = judged(tmp_path, llm()).criteria
    assert judge.score == 0.0 and judge.error is not None and judge.error.startswith("judge call failed: ")
    assert said in judge.error
    assert judge.evaluation_status == "not_evaluated" and judge.details["unavailable"] is True
    assert judge.details["judge_usage"]["input_tokens"] == 0  # what it spent is said (nothing known)


# ----------------------------------------------------------------------------- findings


def test_an_llm_judge_asks_for_findings_and_keeps_them(tmp_path: Path, api: Any) -> None:
    fake = api(Script([], verdict={"score": 0.8, "rationale": "ok", "findings": FINDINGS}))
    (judge,) = judged(tmp_path, llm()).criteria
    assert (judge.score, judge.findings) == (0.8, FINDINGS)
    request = forced(fake.script.requests)
    (tool,) = request["tools"]
    schema = tool["input_schema"]
    assert schema["properties"]["findings"]["type"] == "array"
    assert schema["properties"]["findings"]["items"] == {"type": "string"}
    assert "findings" not in schema["required"]  # optional, as coder_eval's JudgeVerdict: a verdict without scores
    assert "findings" in request["system"] and "findings" in request["messages"][0]["content"]


def test_a_verdict_without_findings_still_scores(tmp_path: Path, api: Any) -> None:
    api(Script([], verdict={"score": 0.8, "rationale": "ok"}))
    (judge,) = judged(tmp_path, llm()).criteria
    assert (judge.score, judge.error, judge.findings) == (0.8, None, [])


def test_an_agent_judge_is_asked_for_findings_and_they_are_read_from_its_verdict() -> None:
    assert '"findings": [' in agent_judge.CLOSING and "findings" in agent_judge.SYSTEM_PROMPT
    text = json.dumps({"score": 0.6, "rationale": "r", "findings": FINDINGS, "checks": {"a": {"score": 1}}})
    assert parse_verdict(f"Done.\n```json\n{text}\n```")["findings"] == FINDINGS
    assert "findings" in llm_judge.CLOSING
