"""Telemetry through the installed CLI, as an acceptance sweep found it wanting.

A collector that never answers held every claude-code evaluation's agent
stage ~2-4 s (the CLI's own export waited at its exit); ``--retry-errors``
re-sent the root and run spans with the ids of the attempt it replaced; a
rescore's trace depended on how its folder was typed; ``TELEMETRY_ENABLED=0``
did not turn export off; a failed pre_run's command and a judge's reply
reached span status messages; Claude Code's own telemetry lost the user's
resource attributes; tool spans were children of chat spans; the simulated
user's tokens were one number on its spans and none on the token metric.
"""

from __future__ import annotations

import json
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ..support.fake_anthropic import Script, Turn
from ..support.helpers import agentless_task, criterion, write_task
from ..support.otlp_receiver import OtlpReceiver, Received, _value
from .conftest import (
    SystemCli,
    anthropic_environment,
    claude_code_task,
    key_forms,
    new_key,
    only_run,
    replay_task_file,
)

pytestmark = pytest.mark.slow


@dataclass
class Collected(Received):
    """Every span whole (ids, parent, times, status), each log record's resource, each metric point."""

    spans: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # attributes, resource, trace_id
    points: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # metric name: each point's attributes

    def record(self, path: str, body: bytes) -> None:
        super().record(path, body)
        if path.endswith("/v1/traces"):
            for resource in ExportTraceServiceRequest.FromString(body).resource_spans:
                for scope in resource.scope_spans:
                    self.spans.extend(map(_span, scope.spans))
        elif path.endswith("/v1/logs"):
            for logs in ExportLogsServiceRequest.FromString(body).resource_logs:
                owner = _attributes(logs.resource.attributes)
                for scope in logs.scope_logs:
                    self.records.extend(
                        {"attributes": _attributes(r.attributes), "resource": owner, "trace_id": r.trace_id.hex()}
                        for r in scope.log_records
                    )
        elif path.endswith("/v1/metrics"):
            for metrics in ExportMetricsServiceRequest.FromString(body).resource_metrics:
                for scope in metrics.scope_metrics:
                    for metric in scope.metrics:
                        data = getattr(metric, metric.WhichOneof("data"))
                        self.points.setdefault(metric.name, []).extend(
                            {**_attributes(p.attributes), **_amount(p)} for p in data.data_points
                        )

    def named(self, name: str) -> list[dict[str, Any]]:
        return [span for span in self.spans if span["name"] == name]


def _series(point: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """A metric point's series: its attributes (not its amounts, named ``=...``)."""
    return tuple(sorted((key, str(value)) for key, value in point.items() if not key.startswith("=")))


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


def _amount(point: Any) -> dict[str, Any]:
    """A point's value: a sum's, or a histogram's sum and count (under names no attribute has)."""
    if hasattr(point, "bucket_counts"):
        return {"=sum": point.sum, "=count": point.count}
    return {"=value": point.as_int or point.as_double}


def _span(span: Any) -> dict[str, Any]:
    return {
        "name": span.name,
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent": span.parent_span_id.hex() or None,
        "start": span.start_time_unix_nano,
        "end": span.end_time_unix_nano,
        "status": (span.status.code, span.status.message),
        "attributes": _attributes(span.attributes),
    }


def plain_task(folder: Path, task_id: str = "plain", **changes: Any) -> Path:
    changes.setdefault("success_criteria", [criterion("file_exists", path=".")])
    return write_task(folder, agentless_task(task_id=task_id, **changes), f"{task_id}.yaml")


def coded_session() -> Script:
    return Script([Turn(tools=[("Bash", {"command": "echo hi > out.txt"})]), Turn(text="Done: created out.txt")])


def last_turn_s(result: dict[str, Any]) -> float:
    """The last model round trip of the agent, as task.json times it: the CLI's exit is in it."""
    turn = result["iterations"][-1]["turns"][-1]
    return float(turn["ended_at"] - turn["started_at"])


def test_a_collector_that_never_answers_costs_a_claude_code_evaluation_half_a_second_at_most(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """The CLI's own export waited ~2 s at its exit (its default shutdown timeout), inside the agent stage."""
    tasks = tmp_path / "tasks"
    claude_code_task(tasks, "coded")
    lasts = {}
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts (the kernel's backlog), never answers
        hanging = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{silent.getsockname()[1]}"}
        for label, telemetry in (("off", {}), ("hanging", hanging)):
            fake = scripted_anthropic(coded_session())
            runs = tmp_path / label
            outcome = system_cli(
                "run", tasks, "--runs-dir", runs, env={**anthropic_environment(fake.url, new_key()), **telemetry}
            )
            assert outcome.code == 0, outcome.output
            lasts[label] = last_turn_s(only_run(runs).result("coded"))
    assert lasts["hanging"] - lasts["off"] < 1.5, lasts  # ~0.4 s now; ~2.1 s before


def test_a_retried_evaluation_is_a_trace_of_its_own_found_from_task_json_and_counted_as_a_retry(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """--retry-errors re-sent `evaluate <task>` and `run <id>` with the ids of the ERROR it replaced: a backend
    keeping the first span of an id showed the stale ERROR."""
    task = plain_task(tmp_path / "tasks", "flaky", pre_run=[{"command": '[ "$FLAKY_OK" = 1 ] || exit 3'}])
    received = Collected()
    with OtlpReceiver(received) as receiver_url:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url}
        outcome, run = system_cli.run(task, env=env, timeout=60)
        assert outcome.code == 1 and run.result("flaky")["final_status"] == "ERROR", outcome.output
        retried = system_cli("run", "--retry-errors", run.path, env={**env, "FLAKY_OK": "1"})
        assert retried.code == 0, retried.output
    roots = received.named("evaluate flaky")
    assert [span["attributes"]["coder_eval.final_status"] for span in roots] == ["ERROR", "SUCCESS"]
    assert len({(span["trace_id"], span["span_id"]) for span in roots}) == 2, roots
    assert run.result("flaky")["trace_id"] == roots[1]["trace_id"]  # the retry is found from task.json
    runs = received.named(f"run {run.path.name}")
    assert len({span["span_id"] for span in runs}) == 2, runs
    assert runs[1]["parent"] == runs[0]["span_id"] and runs[1]["trace_id"] == runs[0]["trace_id"]
    counted = [(p["coder_eval.status"], p.get("coder_eval.retry")) for p in received.points["coder_eval.evaluations"]]
    assert sorted(counted, key=str) == [("ERROR", None), ("SUCCESS", True)], counted


def test_a_rescore_joins_the_trace_task_json_names_however_its_folder_is_given(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """The trace id hashed the folder as typed: runs/latest, runs/<id>, an absolute path and a copy each rescored
    into a trace of their own."""
    received = Collected()
    with OtlpReceiver(received) as receiver_url:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url}
        outcome, run = system_cli.run(plain_task(tmp_path / "tasks"), env=env, timeout=60)
        assert outcome.code == 0, outcome.output
        copy = tmp_path / "elsewhere" / run.path.name
        shutil.copytree(run.path, copy, symlinks=True)
        for given in ("runs/latest", f"runs/{run.path.name}", run.path.absolute(), copy):
            rescored = system_cli("rescore", given, env=env)
            assert rescored.code == 0, (given, rescored.output)
    (root,) = received.named("evaluate plain")
    assert root["trace_id"] == run.result("plain")["trace_id"]
    scores = received.named("score")
    assert len(scores) == 5, scores  # the run's and four rescores'
    assert {(s["trace_id"], s["parent"]) for s in scores} == {(root["trace_id"], root["span_id"])}, scores


@pytest.mark.parametrize("value", ["0", "no", "OFF"])
def test_telemetry_enabled_off_in_any_form_a_setting_reads_as_false_sends_nothing(
    tmp_path: Path, system_cli: SystemCli, value: str
) -> None:
    received = Received()
    with OtlpReceiver(received) as receiver_url:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url, "TELEMETRY_ENABLED": value}
        outcome, _ = system_cli.run(plain_task(tmp_path / "tasks"), env=env, timeout=60)
    assert outcome.code == 0, outcome.output
    assert received.paths == [], received.paths


def test_no_command_or_judge_reply_is_a_status_message_unless_content_is_captured(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """A failed pre_run's whole command was the root span's status; an llm_judge's reply (in its error) the judge
    span's, with the first characters of the key it held."""
    key = new_key("sk-ant-api03-")
    tasks = tmp_path / "tasks"
    plain_task(tasks, "pre", pre_run=[{"command": "echo PRE-RUN-CONTENT >/dev/null; exit 3"}])
    judged = criterion("llm_judge", prompt="grade f.txt", files=["f.txt"])
    plain_task(tasks, "judged", pre_run=[{"command": "echo x > f.txt"}], success_criteria=[judged])
    statuses: dict[bool, dict[str, str]] = {}
    for capture in (False, True):
        fake = scripted_anthropic(Script([], verdict={"score": f"JUDGE-REPLY-CONTENT {key}"}))
        received = Collected()
        with OtlpReceiver(received) as receiver_url:
            env = {
                **anthropic_environment(fake.url, key),
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url,
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": str(capture).lower(),
            }
            outcome = system_cli("run", tasks, "--runs-dir", tmp_path / f"runs-{capture}", env=env)
        assert outcome.code == 1, outcome.output
        failed = [s for s in received.spans if s["status"][0] == 2]  # ERROR
        statuses[capture] = {s["name"]: s["status"][1] for s in failed}
    quiet = statuses[False]
    assert quiet["evaluate pre"] == "pre_run command 1 failed (exit code 3)", quiet
    (judge,) = [message for name, message in quiet.items() if name.startswith("chat ")]
    assert judge == "judge_error", quiet
    said = json.dumps(quiet)
    assert "PRE-RUN-CONTENT" not in said and "JUDGE-REPLY-CONTENT" not in said and key[:16] not in said, said
    assert "PRE-RUN-CONTENT" in statuses[True]["evaluate pre"]  # content, when asked for
    assert not [form for form in key_forms(key).values() if form.decode() in json.dumps(statuses)]


def test_claude_codes_own_telemetry_keeps_the_users_resource_attributes_and_spans_follow_the_genai_layout(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """The CLI got OTEL_RESOURCE_ATTRIBUTES=coder_eval.trace_id=... alone; a tool call's id was `1.1`; execute_tool
    spans were children of chat spans (the conventions make them siblings under invoke_agent), and a chat span
    lasted to the next turn's start, tools included; the token metric was one total per evaluation, without
    gen_ai.operation.name."""
    fake = scripted_anthropic(coded_session())
    tasks = tmp_path / "tasks"
    claude_code_task(tasks, "coded")
    received = Collected()
    with OtlpReceiver(received) as receiver_url:
        env = {
            **anthropic_environment(fake.url, new_key()),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url,
            "OTEL_RESOURCE_ATTRIBUTES": "team=evals,deployment.environment=ci",
        }
        outcome, run = system_cli.run(tasks, env=env)
    assert outcome.code == 0, outcome.output
    result = run.result("coded")
    cli_records = [r for r in received.records if r["resource"].get("coder_eval.trace_id")]
    assert cli_records, received.records
    for record in cli_records:
        owner = record["resource"]
        assert (owner["team"], owner["deployment.environment"]) == ("evals", "ci"), owner
        assert owner["coder_eval.trace_id"] == result["trace_id"], owner

    (invoke,) = received.named("invoke_agent claude-code")
    chats, (tool,) = received.named("chat claude-test"), received.named("execute_tool Bash")
    assert {span["parent"] for span in [*chats, tool]} == {invoke["span_id"]}
    (call,) = result["iterations"][0]["commands"]
    assert tool["attributes"]["gen_ai.tool.call.id"] == call["tool_id"]
    first = min(chats, key=lambda span: span["start"])
    assert first["end"] <= tool["start"], (first, tool)  # the model's reply ended before its call ran

    tokens = received.points["gen_ai.client.token.usage"]
    assert {p["gen_ai.operation.name"] for p in tokens} == {"chat"}, tokens
    assert {(p["gen_ai.provider.name"], p["gen_ai.request.model"]) for p in tokens} == {("anthropic", "claude-test")}
    latest = {_series(p): p for p in tokens}  # cumulative: a loaded run exported before its last export too
    assert sum(p["=count"] for p in latest.values() if p["gen_ai.token.type"] == "output") == len(chats), tokens


def test_the_simulated_users_calls_carry_their_tokens_on_spans_and_the_token_metric(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """Its spans had one ``coder_eval.tokens`` (input + output) and the token metric no point of it; its last
    call, the stop token alone, no message records: a point still. A recorded user asked no model: none."""
    fake = scripted_anthropic(
        Script(
            [
                Turn(text="What should out.txt say?"),
                Turn(tools=[("Bash", {"command": "echo done > out.txt"})]),
                Turn(text="out.txt says done."),
            ],
            user_replies=["It should say done."],  # then the stop token alone (the fake's 50 in, 10 out a call)
        )
    )
    tasks = tmp_path / "tasks"
    simulation = {"enabled": True, "persona": "a product owner", "goal": "out.txt says done", "max_turns": 4}
    claude_code_task(tasks, "dialog", initial_prompt="Please write out.txt", simulation=simulation)
    recorded = [{"text": "Which file?"}, {"user": "out.txt, please."}, {"text": "Written."}]
    replay_task_file(
        tasks, "recorded", recorded, simulation=simulation, success_criteria=[criterion("file_exists", path=".")]
    )
    received = Collected()
    with OtlpReceiver(received) as receiver_url:
        env = {**anthropic_environment(fake.url, new_key()), "OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url}
        outcome, run = system_cli.run(tasks, env=env)
    assert outcome.code == 0, outcome.output
    dialog = run.result("dialog")
    assert dialog["simulation"]["stop_reason"] == "stop_token", dialog["simulation"]
    (said,) = [m for m in dialog["dialog"] if m["role"] == "user" and m["tokens"]]
    assert (said["input_tokens"], said["output_tokens"], said["tokens"]) == (50, 10, 60), said

    users = [span for span in received.named("chat simulated_user") if span["trace_id"] == dialog["trace_id"]]
    assert [span["attributes"]["gen_ai.usage.input_tokens"] for span in users] == [50], users
    assert [span["attributes"]["gen_ai.usage.output_tokens"] for span in users] == [10], users
    assert not any("coder_eval.tokens" in span["attributes"] for span in received.spans), received.spans
    recorded_trace = run.result("recorded")["trace_id"]
    (replayed,) = [span for span in received.named("chat simulated_user") if span["trace_id"] == recorded_trace]
    assert not [key for key in replayed["attributes"] if key.startswith("gen_ai.usage.")], replayed

    points = {  # the last export of each series (a histogram's points are cumulative)
        (p["gen_ai.request.model"], p["gen_ai.token.type"]): (p["=sum"], p["=count"])
        for p in received.points["gen_ai.client.token.usage"]
    }
    assert points["claude-sonnet-4-6", "input"] == (100, 2), points  # both calls: the message and the stop token
    assert points["claude-sonnet-4-6", "output"] == (20, 2), points
    simulator = [p for p in received.points["gen_ai.client.token.usage"] if p["gen_ai.request.model"] != "claude-test"]
    assert {(p["gen_ai.operation.name"], p["gen_ai.provider.name"]) for p in simulator} == {("chat", "anthropic")}
