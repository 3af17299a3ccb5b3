"""A scripted OpenAI Chat Completions API on 127.0.0.1 (what opencode's OpenAI-compatible providers call).

A client posts to /v1/chat/completions with the whole conversation; the
number of tool results already in it (``role: tool`` messages), plus the
assistant replies that a later user message followed (the earlier exchanges
of a dialog), selects the scripted step. A request without tools (a side
call, such as a session title) gets a short text and counts as no step.
Replies stream as the API streams them (``chat.completion.chunk`` events,
the usage in a last chunk with no choices, then ``[DONE]``) when the request
streams, and come as one ``chat.completion`` otherwise.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .fake_http import LoopbackServer, RecordingHandler

SIDE_TEXT = "Scripted title"


@dataclass
class Step:
    """One scripted assistant message: tool calls (name, arguments) and/or text, and its usage."""

    tools: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    text: str | None = None
    prompt_tokens: int = 200
    cached_tokens: int = 50
    completion_tokens: int = 30
    delay_s: float = 0.0  # before its reply (a model slow to answer this one)


@dataclass
class ChatScript:
    steps: list[Step]
    status: int = 200  # a non-200 makes every scripted call fail with this HTTP status
    latency_s: float = 0.0  # before each step's reply (side calls are answered at once)
    requests: list[dict[str, Any]] = field(default_factory=list)  # the bodies of the step requests, in order
    side_requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)  # of each step request, in order
    lock: threading.Lock = field(default_factory=threading.Lock)


def step_index(body: dict[str, Any]) -> int:
    """Tool results so far, plus the assistant replies a later user message answered (a dialog's earlier exchanges)."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    results = sum(1 for m in messages if m.get("role") == "tool")
    answered = sum(a.get("role") == "assistant" and b.get("role") == "user" for a, b in itertools.pairwise(messages))
    return results + answered


def _usage(step: Step) -> dict[str, Any]:
    return {
        "prompt_tokens": step.prompt_tokens,
        "completion_tokens": step.completion_tokens,
        "total_tokens": step.prompt_tokens + step.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": step.cached_tokens},
    }


def _tool_calls(step: Step, index: int) -> list[dict[str, Any]]:
    return [
        {
            "index": n,
            "id": f"call_{index}_{n}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for n, (name, arguments) in enumerate(step.tools)
    ]


def _chunk(index: int, model: str, choices: list[dict[str, Any]], **extra: Any) -> str:
    chunk = {"id": f"chatcmpl-{index}", "object": "chat.completion.chunk", "created": int(time.time())}
    return "data: " + json.dumps({**chunk, "model": model, "choices": choices, **extra}) + "\n\n"


def stream(step: Step, index: int, model: str) -> str:
    """The step as server-sent events: role, text, tool calls, the finish reason, the usage, [DONE]."""
    delta: dict[str, Any] = {"role": "assistant", "content": step.text or ""}
    events = [_chunk(index, model, [{"index": 0, "delta": delta, "finish_reason": None}])]
    calls = _tool_calls(step, index)
    if calls:
        events.append(_chunk(index, model, [{"index": 0, "delta": {"tool_calls": calls}, "finish_reason": None}]))
    finish = "tool_calls" if calls else "stop"
    events.append(_chunk(index, model, [{"index": 0, "delta": {}, "finish_reason": finish}]))
    events.append(_chunk(index, model, [], usage=_usage(step)))
    return "".join(events) + "data: [DONE]\n\n"


def completion(step: Step, index: int, model: str) -> dict[str, Any]:
    """The step as one ``chat.completion`` (a request that does not stream)."""
    calls = [{key: value for key, value in call.items() if key != "index"} for call in _tool_calls(step, index)]
    message: dict[str, Any] = {"role": "assistant", "content": step.text}
    if calls:
        message["tool_calls"] = calls
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
    return {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": _usage(step),
    }


class _Handler(RecordingHandler):
    script: ChatScript

    def do_POST(self) -> None:
        body = self.read_json()
        if not self.path.endswith("/chat/completions"):
            self.send(404, b"{}", "application/json")
            return
        script, model = self.script, str(body.get("model") or "scripted")
        if not body.get("tools"):
            with script.lock:
                script.side_requests.append(body)
            self._reply(body, Step(text=SIDE_TEXT, prompt_tokens=10, cached_tokens=0, completion_tokens=3), 0, model)
            return
        with script.lock:
            script.requests.append(body)
            script.headers.append(dict(self.headers))
        if script.status != 200:
            self.send(script.status, b'{"error": {"message": "scripted failure"}}', "application/json")
            return
        index = step_index(body)
        step = script.steps[index] if index < len(script.steps) else Step(text="Done.")
        time.sleep(script.latency_s + step.delay_s)
        self._reply(body, step, index, model)

    def _reply(self, body: dict[str, Any], step: Step, index: int, model: str) -> None:
        if body.get("stream"):
            self.send(200, stream(step, index, model).encode(), "text/event-stream")
        else:
            self.send(200, json.dumps(completion(step, index, model)).encode(), "application/json")


class FakeChat(LoopbackServer):
    handler = _Handler
    suffix = "/v1"
