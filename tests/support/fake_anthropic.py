"""A scripted Messages-API server on 127.0.0.1 that the real clients talk to.

The real claude-agent-sdk and its bundled CLI (and the anthropic SDK) are
pointed at it with ANTHROPIC_BASE_URL. Each reply is chosen from the request,
not from a call counter: a request with no tools (the CLI's title side call)
gets a short text; otherwise the number of tool results already in the
conversation, plus the text-only replies that ended earlier exchanges of a
dialog (each user message of a continued session follows one), selects the
scripted turn. A simulated user's request (its system prompt opens with the
simulator's role) gets the next of ``user_replies`` (by how many it already
said), or ``simulator_status`` when that is not 200. Replies stream as the real API
streams them (message_start ... message_stop) when the request streams, and
come as one JSON message when it does not (the anthropic SDK's create()).

For the judges: a request that forces ``submit_verdict`` gets the scripted
``verdict`` (a dict: the tool call's input; a string: a text-only reply);
``cut_streams`` drops the connection of the first N streamed agent replies after their message_start;
``fail_first`` answers the first N model requests with ``fail_status`` (429
then success); ``fail_from_turn`` answers every agent request from that scripted turn on with
``fail_status`` (an agent that fails mid-dialog); ``latency_s`` delays every reply; Bedrock's
``/model/<id>/invoke`` is answered like ``/v1/messages``, and
``/model/<id>/invoke-with-response-stream`` with the same events in AWS
event-stream frames (what the Claude Code CLI reads on Bedrock).
"""

from __future__ import annotations

import base64
import binascii
import json
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from coder_eval_dagster.core.simulation import SIMULATOR_ROLE

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
    # the answer to a forced submit_verdict request: the call's input, several calls' inputs, or a text-only reply
    verdict: dict[str, Any] | list[dict[str, Any]] | str | None = None
    fail_first: int = 0  # answer the first N model requests with fail_status
    fail_status: int = 429
    fail_from_turn: int | None = None  # agent requests from this scripted turn on fail with fail_status
    cut_streams: int = 0  # the first N streamed agent replies end after their message_start
    latency_s: float = 0.0
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    max_in_flight: int = 0  # the most model requests the server held at once
    user_replies: list[str] = field(default_factory=list)  # the simulated user's messages, in order
    simulator_status: int = 200
    verdicts: list[dict[str, Any]] = field(default_factory=list)  # forced submit_verdict inputs, one per request
    judged: int = 0  # the forced requests answered from ``verdicts``

    def simulator_requests(self) -> list[dict[str, Any]]:
        return [body for body in self.requests if is_simulator(body)]

    def agent_requests(self) -> list[dict[str, Any]]:
        return [body for body in self.requests if body.get("tools") and not body.get("tool_choice")]

    def enter(self) -> None:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def take(self, counter: str) -> bool:
        """One of the scripted mishaps ``counter`` counts (``fail_first``, ``cut_streams``), while any are left."""
        with self.lock:
            left = getattr(self, counter)
            if left > 0:
                setattr(self, counter, left - 1)
            return left > 0


def is_simulator(body: dict[str, Any]) -> bool:
    return str(body.get("system") or "").startswith(SIMULATOR_ROLE)


def _blocks_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []


def _turn_index(body: dict[str, Any]) -> int:
    """Tool results so far plus the text-only replies that ended earlier exchanges of a dialog."""
    count = 0
    for message in body.get("messages", []):
        types = [block.get("type") for block in _blocks_of(message)]
        count += types.count("tool_result")
        if message.get("role") == "assistant" and "tool_use" not in types:
            count += 1
    return count


def _blocks(turn: Turn, index: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for n, (name, arguments) in enumerate(turn.tools):
        blocks.append({"type": "tool_use", "id": f"toolu_{index}_{n}", "name": name, "input": arguments})
    return blocks


def _message(turn: Turn, model: str, index: int) -> dict[str, Any]:
    """The whole reply as one JSON message (a request that does not stream)."""
    return {
        "id": f"msg_{index}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _blocks(turn, index),
        "stop_reason": "tool_use" if turn.tools else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens},
    }


def _events(turn: Turn, model: str, index: int) -> list[tuple[str, dict[str, Any]]]:
    blocks = _blocks(turn, index)
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


def _frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude (lengths, CRC), string headers, payload, message CRC."""
    encoded = b"".join(
        bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
        for name, value in headers.items()
    )
    prelude = struct.pack(">II", 16 + len(encoded) + len(payload), len(encoded))
    message = prelude + struct.pack(">I", binascii.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", binascii.crc32(message))


def _event_stream(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    return b"".join(
        _frame(headers, json.dumps({"bytes": base64.b64encode(json.dumps(data).encode()).decode()}).encode())
        for _, data in events
    )


def _reply(script: Script, body: dict[str, Any]) -> tuple[Turn, int]:
    """The scripted turn for a request: a verdict, a title side call, or the turn of the conversation."""
    if is_simulator(body):
        said = sum(message.get("role") == "assistant" for message in body.get("messages", []))
        reply = script.user_replies[said] if said < len(script.user_replies) else "<<<END>>>"
        return Turn(text=reply, input_tokens=50, output_tokens=10), -2
    forced = (body.get("tool_choice") or {}).get("name")
    if forced and script.verdicts:
        with script.lock:
            call, script.judged = script.verdicts[min(script.judged, len(script.verdicts) - 1)], script.judged + 1
        return Turn(tools=[(forced, call)]), 0
    if forced and script.verdict is not None:
        verdict = script.verdict
        if isinstance(verdict, str):
            return Turn(text=verdict), 0
        return Turn(tools=[(forced, call) for call in (verdict if isinstance(verdict, list) else [verdict])]), 0
    if not body.get("tools"):
        return Turn(text="Title", input_tokens=5, output_tokens=2), -1
    index = _turn_index(body)
    return (script.turns[index] if index < len(script.turns) else Turn(text="Done.")), index


def _failure(script: Script, body: dict[str, Any]) -> int | None:
    """The scripted failure status of this request, if it fails."""
    if is_simulator(body):
        return script.simulator_status if script.simulator_status != 200 else None
    if script.fail_from_turn is not None and body.get("tools") and _turn_index(body) >= script.fail_from_turn:
        return script.fail_status
    if script.take("fail_first"):
        return script.fail_status if script.status == 200 else script.status
    return script.status if body.get("tools") and script.status != 200 else None


class _Handler(RecordingHandler):
    script: Script

    def do_POST(self) -> None:
        body = self.read_json()
        script = self.script
        if "count_tokens" in self.path:
            self.send(200, json.dumps({"input_tokens": 10}).encode(), "application/json")
            return
        bedrock = self.path.startswith("/model/")
        if not (self.path.startswith("/v1/messages") or bedrock):
            self.send(404, b"{}", "application/json")
            return
        script.requests.append(body)
        script.headers.append(dict(self.headers))
        script.enter()
        self.cut_at: int | None = None
        try:
            reply = self.answer(script, body, bedrock)
        finally:
            script.leave()  # before the reply goes out: a client that got it may send its next request at once
        if self.cut_at is None:
            self.send(*reply)
            return
        status, stream, content_type = reply
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(stream)))
        self.end_headers()
        self.wfile.write(stream[: self.cut_at])
        self.wfile.flush()
        time.sleep(0.5)  # the client reads the message_start before the connection drops
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def answer(self, script: Script, body: dict[str, Any], bedrock: bool) -> tuple[int, bytes, str]:
        time.sleep(script.latency_s)
        status = _failure(script, body)
        if status is not None:
            error = {"type": "error", "error": {"type": "api_error", "message": "scripted failure"}}
            return status, json.dumps(error).encode(), "application/json"
        turn, index = _reply(script, body)
        model = self.path.split("/")[2] if bedrock else body.get("model", "m")
        if self.path.endswith("/invoke-with-response-stream"):
            return 200, _event_stream(_events(turn, model, index)), "application/vnd.amazon.eventstream"
        if not body.get("stream"):
            return 200, json.dumps(_message(turn, model, index)).encode(), "application/json"
        events = _events(turn, model, index)
        if body.get("tools") and script.take("cut_streams"):  # message_start (its own id, as each request's), then the
            events[0][1]["message"]["id"] += "_cut"  # connection drops mid-body
            self.cut_at = len(_sse(*events[0]))
        return 200, b"".join(_sse(name, data) for name, data in events), "text/event-stream"


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


class FakeAnthropic(LoopbackServer):
    handler = _Handler
    suffix = ""


API_KEY = "sk-ant-test-0123456789abcdef"


def scripted_api_environment(url: str) -> dict[str, str]:
    """What points the real clients (in-process) at a scripted server on ``url``; a proxy there records escapes."""
    return {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": API_KEY,
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "HTTPS_PROXY": url,
        "HTTP_PROXY": url,
        "NO_PROXY": "127.0.0.1,localhost",
        "MY_SERVICE_TOKEN": "caller-secret-value-42",
        "API_BACKEND": "direct",
    }
