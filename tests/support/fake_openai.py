"""A scripted OpenAI Responses API on 127.0.0.1 for the codex agent's tests.

Codex posts to /v1/responses with the whole conversation; the number of
function-call outputs already in it, plus the assistant replies that a
later user message followed (the earlier exchanges of a dialog), selects
the scripted step. Replies
stream as server-sent events: response.created, one
response.output_item.done per item, response.completed with usage.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from .fake_http import LoopbackServer, RecordingHandler


@dataclass
class Step:
    commands: list[str] = field(default_factory=list)  # exec_command calls
    text: str | None = None
    input_tokens: int = 200
    cached_tokens: int = 50
    output_tokens: int = 30


@dataclass
class ResponsesScript:
    steps: list[Step]
    status: int = 200
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)  # of each /responses request, in order


def _role(item: Any) -> str | None:
    return item.get("role") if isinstance(item, dict) and item.get("type") in ("message", None) else None


def _step_index(body: dict[str, Any]) -> int:
    items = body.get("input") if isinstance(body.get("input"), list) else []
    outputs = sum(1 for item in items if isinstance(item, dict) and item.get("type") == "function_call_output")
    answered = sum(_role(item) == "assistant" and _role(after) == "user" for item, after in itertools.pairwise(items))
    return outputs + answered


def _stream(step: Step, index: int) -> str:
    items: list[dict[str, Any]] = []
    for n, command in enumerate(step.commands):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{index}_{n}",
                "call_id": f"call_{index}_{n}",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": command}),
            }
        )
    if step.text:
        items.append(
            {
                "type": "message",
                "id": f"msg_{index}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}],
            }
        )
    response = {"id": f"resp_{index}", "object": "response", "status": "in_progress", "output": []}
    events = [("response.created", {"type": "response.created", "response": response})]
    events += [
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": i, "item": item})
        for i, item in enumerate(items)
    ]
    usage = {
        "input_tokens": step.input_tokens,
        "input_tokens_details": {"cached_tokens": step.cached_tokens},
        "output_tokens": step.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": step.input_tokens + step.output_tokens,
    }
    done = {**response, "status": "completed", "output": items, "usage": usage}
    events.append(("response.completed", {"type": "response.completed", "response": done}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


class _Handler(RecordingHandler):
    script: ResponsesScript

    def do_POST(self) -> None:
        body = self.read_json()
        if not self.path.split("?")[0].endswith("/responses"):  # (Azure's api-version in the query)
            self.send(404, b"{}", "application/json")
            return
        self.script.requests.append(body)
        self.script.headers.append(dict(self.headers))
        if self.script.status != 200:
            self.send(self.script.status, b'{"error": {"message": "scripted failure"}}', "application/json")
            return
        index = _step_index(body)
        step = self.script.steps[index] if index < len(self.script.steps) else Step(text="Done.")
        self.send(200, _stream(step, index).encode(), "text/event-stream")


class FakeResponses(LoopbackServer):
    handler = _Handler
    suffix = "/v1"


CODEX_KEY = "sk-codex-test-0123456789"


def codex_environment(url: str) -> dict[str, str]:
    """What points the real codex client (in-process) at a scripted Responses API on ``url``."""
    proxy = url.removesuffix("/v1")
    return {
        "CODEX_BASE_URL": url,
        "CODEX_API_KEY": CODEX_KEY,
        "HTTPS_PROXY": proxy,
        "HTTP_PROXY": proxy,
        "NO_PROXY": "127.0.0.1,localhost",
        "MY_SERVICE_TOKEN": "caller-secret-value-42",
    }
