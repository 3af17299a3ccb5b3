"""Telemetry through the installed CLI, against the GenAI conventions and the OTel SDK's own switches.

A histogram's buckets fit its unit (the SDK's default bounds, 0 to 10,000, put
every evaluation under $5 in one bucket and every agent over 10,000 tokens in
the overflow); a model call names its provider; the simulated user names the
model the server was asked for (or none, recorded); a tool call's arguments are
JSON; ``OTEL_<SIGNAL>_EXPORTER=none`` turns that signal off; a protocol other
than http/protobuf is said, once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ..support.fake_anthropic import Script, Turn
from ..support.helpers import agentless_task, criterion, write_task
from ..support.otlp_receiver import OtlpReceiver, Received, _value
from .conftest import SystemCli, anthropic_environment, claude_code_task, new_key, replay_task_file

pytestmark = pytest.mark.slow
TOKEN_BOUNDS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
DURATION_BOUNDS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
SIGNAL_PATHS = {"TRACES": "/v1/traces", "LOGS": "/v1/logs", "METRICS": "/v1/metrics"}
ONLY_HTTP = "only http/protobuf is supported"


@dataclass
class Detailed(Received):
    """What Received keeps, and each span's trace and each histogram point's bounds and attributes."""

    spans: list[dict[str, Any]] = field(default_factory=list)  # name, trace_id, attributes
    histograms: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # name: [{bounds, attributes}]

    def record(self, path: str, body: bytes) -> None:
        super().record(path, body)
        if path.endswith("/v1/traces"):
            for resource in ExportTraceServiceRequest.FromString(body).resource_spans:
                for scope in resource.scope_spans:
                    self.spans.extend(
                        {"name": s.name, "trace_id": s.trace_id.hex(), "attributes": _attributes(s.attributes)}
                        for s in scope.spans
                    )
        elif path.endswith("/v1/metrics"):
            for metrics in ExportMetricsServiceRequest.FromString(body).resource_metrics:
                for scope in metrics.scope_metrics:
                    for metric in (m for m in scope.metrics if m.WhichOneof("data") == "histogram"):
                        self.histograms.setdefault(metric.name, []).extend(
                            {"bounds": list(p.explicit_bounds), "attributes": _attributes(p.attributes)}
                            for p in metric.histogram.data_points
                        )

    def in_trace(self, trace_id: str, name: str) -> list[dict[str, Any]]:
        return [s["attributes"] for s in self.spans if s["trace_id"] == trace_id and s["name"] == name]


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


def test_histograms_fit_their_units_and_model_calls_name_their_provider_and_model(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """Default bounds [0, 5, ... 10000] for USD, tokens and seconds; no gen_ai.provider.name anywhere; the
    simulated user named `anthropic.claude-sonnet-4-6` on the direct route, and a model for a recorded user; its
    tool arguments were a Python repr."""
    fake = scripted_anthropic(
        Script(
            [
                Turn(text="What should out.txt say?", input_tokens=300, output_tokens=20),
                Turn(tools=[("Bash", {"command": "echo done > out.txt"})], input_tokens=40_000, output_tokens=30),
                Turn(text="out.txt says done.", input_tokens=500, output_tokens=10),
            ],
            user_replies=["It should say done.", "Thanks <<<END>>>"],
        )
    )
    tasks = tmp_path / "tasks"
    simulation = {"enabled": True, "persona": "a product owner", "goal": "out.txt says done", "max_turns": 4}
    claude_code_task(tasks, "dialog", initial_prompt="Please write out.txt", simulation=simulation)
    recorded = [{"text": "Which file?"}, {"user": "out.txt, please."}, {"text": "Written."}]
    replay_task_file(
        tasks, "recorded", recorded, simulation=simulation, success_criteria=[criterion("file_exists", path=".")]
    )
    received = Detailed()
    with OtlpReceiver(received) as receiver_url:
        env = {
            **anthropic_environment(fake.url, new_key()),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url,
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        }
        outcome, run = system_cli.run(tasks, env=env)
    assert outcome.code == 0, outcome.output

    bounds = {name: points[0]["bounds"] for name, points in received.histograms.items()}
    assert bounds["gen_ai.client.token.usage"] == TOKEN_BOUNDS, bounds
    duration = bounds["coder_eval.evaluation.duration"]
    assert duration[: len(DURATION_BOUNDS)] == DURATION_BOUNDS and duration[-1] >= 3600, duration  # hours too
    cost = bounds["coder_eval.evaluation.cost"]
    assert cost[0] == 0.0001 and cost[-1] == 100 and cost == sorted(cost), cost
    tokens = received.histograms["gen_ai.client.token.usage"]
    # one point per model call, named as the conventions require (a replay's recorded turns asked no model)
    assert {p["attributes"].get("gen_ai.provider.name") for p in tokens} == {"anthropic"}, tokens
    assert {p["attributes"]["gen_ai.operation.name"] for p in tokens} == {"chat"}, tokens

    dialog = run.result("dialog")["trace_id"]
    for name in ("evaluate dialog", "invoke_agent claude-code", "chat claude-test", "chat simulated_user"):
        assert {a.get("gen_ai.provider.name") for a in received.in_trace(dialog, name)} == {"anthropic"}, name
    users = received.in_trace(dialog, "chat simulated_user")
    assert {a.get("gen_ai.request.model") for a in users} == {"claude-sonnet-4-6"}, users  # as the server got it
    (bash,) = received.in_trace(dialog, "execute_tool Bash")
    assert json.loads(bash["gen_ai.tool.call.arguments"]) == {"command": "echo done > out.txt"}

    replayed = run.result("recorded")["trace_id"]
    (user,) = received.in_trace(replayed, "chat simulated_user")  # no model was asked: a recording
    assert "gen_ai.request.model" not in user and "gen_ai.provider.name" not in user, user
    assert all("gen_ai.provider.name" not in s["attributes"] for s in received.spans if s["trace_id"] == replayed)


@pytest.mark.parametrize("signal", sorted(SIGNAL_PATHS))
def test_an_otel_signal_exporter_of_none_turns_that_signal_off_and_grpc_is_said_once(
    tmp_path: Path, system_cli: SystemCli, signal: str
) -> None:
    """OTEL_TRACES_EXPORTER=none (the SDK's way to turn one signal off) was ignored: all three were sent; and
    OTEL_EXPORTER_OTLP_PROTOCOL=grpc was sent as HTTP/protobuf without a word."""
    task = write_task(
        tmp_path / "tasks", agentless_task(task_id="plain", success_criteria=[criterion("file_exists", path=".")])
    )
    received = Received()
    with OtlpReceiver(received) as receiver_url:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url,
            f"OTEL_{signal}_EXPORTER": "none",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc",
        }
        outcome, _ = system_cli.run(task, env=env, timeout=60)
    assert outcome.code == 0, outcome.output
    assert set(received.paths) == set(SIGNAL_PATHS.values()) - {SIGNAL_PATHS[signal]}, received.paths
    assert outcome.err.count(ONLY_HTTP) == 1, outcome.err
