"""opencode against an API that fails or answers what no model answers, and an opencode model it cannot route.

Through the installed CLI and the real pinned opencode (installed as
test_run_opencode installs it): a reply that is no model answer looped opencode
endlessly (max_turns never bound), an API error lost its HTTP status (and so its
category), and a task without a provider/model passed `validate` to fail in
every evaluation.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.agents.opencode import Installation

from ..support.fake_chat import ChatScript, FakeChat, Step, _Handler
from .conftest import SystemCli, claude_code_task, new_key, proxied_through
from .test_run_opencode import opencode, opencode_task

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("opencode")]
__all__ = ["opencode"]  # the fixture that installs it, shared with test_run_opencode

A_COMPLETION = json.dumps(  # a whole chat.completion, answered to a request that streams
    {
        "id": "chatcmpl-0",
        "object": "chat.completion",
        "created": 1,
        "model": "qwen-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }
).encode()


@dataclass
class RawScript(ChatScript):
    """Every step request is answered with ``body`` (status 200, ``content_type``) as it is."""

    body: bytes = b""
    content_type: str = "application/json"


class _RawHandler(_Handler):
    script: RawScript

    def do_POST(self) -> None:
        body = self.read_json()
        with self.script.lock:
            self.script.requests.append(body)
        self.send(200, self.script.body, self.script.content_type)


class RawChat(FakeChat):
    handler = _RawHandler


def served(script: ChatScript, server: type[FakeChat] = FakeChat) -> FakeChat:
    fake = server(script)
    fake.__enter__()
    return fake


def environment(url: str) -> dict[str, str]:
    return {"OPENCODE_BASE_URL": url, "OPENCODE_API_KEY": new_key("sk-oc-"), **proxied_through(url)}


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"", "text/event-stream"), (b'{"hello": "world"}', "application/json"), (A_COMPLETION, "application/json")],
    ids=["empty", "foreign-json", "unstreamed-completion"],
)
def test_a_reply_that_is_no_model_answer_ends_the_task_as_an_api_error_not_an_endless_loop(
    tmp_path: Path, system_cli: SystemCli, opencode: Installation, body: bytes, content_type: str
) -> None:
    fake = served(RawScript([], body=body, content_type=content_type), RawChat)
    try:
        task = opencode_task(tmp_path / "tasks", "noanswer", run_limits={"max_turns": 3, "task_timeout": 120})
        outcome, run = system_cli.run(task, env=environment(fake.url))
    finally:
        fake.__exit__()
    result = run.result("noanswer")
    assert result["final_status"] == "ERROR", (result["error_message"], outcome.output)
    assert "not a model answer" in result["error_message"], result["error_message"]
    assert result["error_details"] == {"error_category": "agent_api_error", "component": "agent"}
    assert 1 <= len(fake.script.requests) <= 3, len(fake.script.requests)  # it was 1,806 in 150 s


FAILURES: dict[str, tuple[Callable[[], Any], str, str]] = {
    "http-401": (
        lambda: served(ChatScript([Step(text="Done")], status=401)),
        "APIError 401: scripted failure",  # its HTTP status kept, and so its category
        "agent_auth_error",
    ),
    "not-json": (
        lambda: served(RawScript([], body=b"data: this is not json\n\n", content_type="text/event-stream"), RawChat),
        "the model's reply could not be parsed",
        "agent_api_error",
    ),
}


@pytest.mark.parametrize("case", FAILURES)
def test_an_api_failure_is_an_error_of_its_category(
    tmp_path: Path, system_cli: SystemCli, opencode: Installation, case: str
) -> None:
    serve, said, category = FAILURES[case]
    fake = serve()
    try:
        outcome, run = system_cli.run(opencode_task(tmp_path / "tasks", "failing"), env=environment(fake.url))
    finally:
        fake.__exit__()
    result = run.result("failing")
    assert result["final_status"] == "ERROR", outcome.output
    assert said in result["error_message"], result["error_message"]
    assert result["error_details"] == {"error_category": category, "component": "agent"}


def test_an_opencode_model_without_its_provider_is_refused_before_anything_runs(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    modelless = opencode_task(tmp_path / "tasks", "modelless", agent={"type": "opencode"})
    said = system_cli.invalid(modelless).output
    assert "modelless.yaml:" in said and "agent.model: opencode routes a model by its provider" in said, said
    assert "provider/model, none is set" in said, said
    # --type opencode over a claude-code task: its model names no provider
    task = claude_code_task(tmp_path / "tasks", "claude", agent={"type": "claude-code", "model": "claude-sonnet-4-6"})
    outcome = system_cli("run", task, "--type", "opencode", "--runs-dir", system_cli.runs, env={})
    assert outcome.code == 2, outcome.output
    assert "agent.model: opencode routes a model by its provider: give provider/model, not 'claude-sonnet-4-6'" in (
        outcome.output
    )
    assert not system_cli.runs.exists()
