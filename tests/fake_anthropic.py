"""A scripted Messages-API server on 127.0.0.1 that the real clients talk to.

The real claude-agent-sdk and its bundled CLI (and the anthropic SDK) are
pointed at it with ANTHROPIC_BASE_URL. Each reply is chosen from the request,
not from a call counter: a request with no tools (the CLI's title side call)
gets a short text; otherwise the number of tool results already in the
conversation selects the scripted turn. Replies stream as the real API
streams them (message_start ... message_stop).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .fake_http import LoopbackServer, RecordingHandler


@dataclass
class Turn:
    """One scripted assistant message: tool calls and/or text, and its usage."""

    tools: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    text: str | None = None
    input_tokens: int = 100
    output_tokens: int = 20


@dataclass
class Script:
    turns: list[Turn]
    status: int = 200  # a non-200 makes every scripted call fail with this HTTP status
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def _tool_results(body: dict[str, Any]) -> int:
    count = 0
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            count += sum(1 for block in content if isinstance(block, dict) and block.get("type") == "tool_result")
    return count


def _events(turn: Turn, model: str, index: int) -> list[tuple[str, dict[str, Any]]]:
    blocks: list[dict[str, Any]] = []
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for n, (name, arguments) in enumerate(turn.tools):
        blocks.append({"type": "tool_use", "id": f"toolu_{index}_{n}", "name": name, "input": arguments})
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{index}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": turn.input_tokens, "output_tokens": 1},
                },
            },
        )
    ]
    for position, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": position, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": position, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": position}),
        ]
    stop = "tool_use" if turn.tools else "end_turn"
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": turn.output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


class _Handler(RecordingHandler):
    script: Script

    def do_POST(self) -> None:
        body = self.read_json()
        script = self.script
        if "count_tokens" in self.path:
            self.send(200, json.dumps({"input_tokens": 10}).encode(), "application/json")
            return
        if not self.path.startswith("/v1/messages"):
            self.send(404, b"{}", "application/json")
            return
        script.requests.append(body)
        if body.get("tools") and script.status != 200:
            error = {"type": "error", "error": {"type": "api_error", "message": "scripted failure"}}
            self.send(script.status, json.dumps(error).encode(), "application/json")
            return
        index = _tool_results(body) if body.get("tools") else -1
        turn = script.turns[index] if 0 <= index < len(script.turns) else Turn(text="Done.")
        if not body.get("tools"):
            turn = Turn(text="Title", input_tokens=5, output_tokens=2)
        stream = "".join(
            f"event: {name}\ndata: {json.dumps(data)}\n\n"
            for name, data in _events(turn, body.get("model", "m"), index)
        )
        self.send(200, stream.encode(), "text/event-stream")


class FakeAnthropic(LoopbackServer):
    handler = _Handler
    suffix = ""
