"""The exporting side of ``telemetry``: OpenTelemetry's SDK and OTLP/HTTP exporters, imported only when configured.

The providers are the run's own (never the process-global ones), so a
library caller's own OpenTelemetry set-up is left alone.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from .layout import PREVIOUS_RESULT_FILE
from .models.results import TokenUsage
from .telemetry import (
    CAPTURE_CONTENT,
    EVALUATION_RESULT,
    SIGNALS,
    TASK_END,
    Telemetry,
    content,
    epoch_ns,
    evaluation_failure,
    exports,
    failure_text,
    first_trace_id,
    parsed_trace_id,
    provider_name,
    reply_end_ns,
    retry_trace_id,
    root_span_id,
    route_provider,
    run_span_ids,
    tool_attributes,
    turn_attributes,
    turn_usage,
)

if TYPE_CHECKING:
    from pathlib import Path

    from .evaluation import Evaluation
    from .models.results import CriterionResult, DialogMessage, EvaluationResult, ToolCallRecord

SCOPE = "coder_eval_dagster"
METRIC_EXPORT_INTERVAL_MS = 10_000
SHUTDOWN_S = 5.0  # the most a run's end waits for a collector (docs/running.md, Telemetry)
# Each histogram's bucket bounds, fit for its unit: the SDK's default (0, 5, 10, 25 ... 10,000) put every evaluation
# under $5 in one bucket and every agent spending over 10,000 tokens in the overflow.
TOKEN_BOUNDS = tuple(4.0**n for n in range(14))  # the GenAI conventions' advisory bounds: 1, 4, 16 ... 67,108,864
DURATION_BOUNDS = tuple(0.01 * 2**n for n in range(20))  # theirs, 0.01 s to 81.92 s, on to 5,242.88 s (87 minutes)
COST_BOUNDS = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100)
HTTP_PROTOBUF = "http/protobuf"  # the one OTLP protocol exported (no gRPC exporter is installed)
# How long the Claude Code CLI waits at its exit to send its own telemetry (CLAUDE_CODE_OTEL_SHUTDOWN_TIMEOUT_MS,
# 2 s by default; its flush, 5 s): inside the agent stage, a collector that never answered cost each evaluation
# ~2 s. Measured: 0.2-0.35 s over no telemetry at all (its export timeout, OTEL_EXPORTER_OTLP_TIMEOUT, changed
# nothing at its exit). A collector that takes longer to answer misses the CLI's last events and metrics.
CLI_EXPORT_WAIT_MS = "300"

log = logging.getLogger(__name__)


SAMPLED = TraceFlags(TraceFlags.SAMPLED)


class _Spans:
    """Spans written whole when they end, handed to the batch processor as the SDK's ``ReadableSpan``.

    Every span here is known whole when it is written (its start and end
    times, its attributes), and the evaluation's root and the run have ids
    every process derives alike. The SDK's tracer would build each through
    its sampler, context and attribute checks (~45 us a span, measured: 1,000
    rows' 6,000 spans 0.27 s of the harness's CPU); built whole it is ~10 us.
    """

    def __init__(self, resource: Resource, processor: BatchSpanProcessor | None):
        self.resource, self.processor = resource, processor
        self.scope = InstrumentationScope(SCOPE)

    def write(
        self,
        name: str,
        ids: tuple[int, int],
        parent: int | None,
        start_ns: int,
        end_ns: int,
        attributes: dict[str, Any],
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        failed: tuple[str, str] | None = None,
        events: Sequence[Event] = (),
        links: Sequence[Link] = (),
    ) -> None:
        """The span ``ids`` (trace, span), child of span ``parent`` of the same trace (None: a root); ``failed``:
        its error's type (``error.type``, as the GenAI conventions require of a failed operation) and description."""
        if self.processor is None:  # traces go nowhere
            return
        status = None
        if failed is not None:
            status = Status(StatusCode.ERROR, failed[1])
            attributes = {**attributes, "error.type": failed[0]}
        trace_id, span_id = ids
        span = ReadableSpan(
            name,
            context=SpanContext(trace_id, span_id, is_remote=False, trace_flags=SAMPLED),
            parent=SpanContext(trace_id, parent, is_remote=False, trace_flags=SAMPLED) if parent else None,
            resource=self.resource,
            attributes=attributes,
            events=events,
            links=links,
            kind=kind,
            status=status or Status(StatusCode.UNSET),
            start_time=start_ns,
            end_time=max(end_ns, start_ns),
            instrumentation_scope=self.scope,
        )
        self.processor.on_end(span)


def _service_name(environ: Mapping[str, str]) -> dict[str, str]:
    """``coder-eval`` unless the user named the service (OTEL_SERVICE_NAME, or service.name in
    OTEL_RESOURCE_ATTRIBUTES: the SDK reads both, and an attribute given here would win over them)."""
    if environ.get("OTEL_SERVICE_NAME"):
        return {"service.name": environ["OTEL_SERVICE_NAME"]}
    return {} if "service.name=" in environ.get("OTEL_RESOURCE_ATTRIBUTES", "") else {"service.name": "coder-eval"}


def warn_of_other_protocols(environ: Mapping[str, str]) -> None:
    """One warning when the user asked for an OTLP protocol other than HTTP/protobuf (gRPC on 4317): it is sent
    as HTTP/protobuf all the same, and a gRPC-only collector refuses it."""
    names = ["OTEL_EXPORTER_OTLP_PROTOCOL", *(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL" for signal in SIGNALS)]
    asked = [f"{name}={environ[name]}" for name in names if environ.get(name, HTTP_PROTOBUF).lower() != HTTP_PROTOBUF]
    if asked:
        log.warning("telemetry: only %s is supported: sent so, not as %s", HTTP_PROTOBUF, ", ".join(asked))


def _new_id() -> int:
    return random.getrandbits(64) or 1


def _in_span(trace_id: int, span_id: int) -> Any:
    """A context whose current span is this one (for a log record correlated to it)."""
    span = NonRecordingSpan(SpanContext(trace_id, span_id, is_remote=False, trace_flags=SAMPLED))
    return trace.set_span_in_context(span)


class OtlpTelemetry(Telemetry):
    enabled = True

    def __init__(self, environ: Mapping[str, str]):
        self.environ = environ
        self.capture = environ.get(CAPTURE_CONTENT, "").lower() == "true"
        warn_of_other_protocols(environ)
        resource = Resource.create(_service_name(environ))
        # each signal only where an endpoint is named for it (Phoenix takes traces alone): one named for no one
        # went to the SDK's default, localhost:4318, and a run waited ~15 s at its end for each refused export
        self.spans = _Spans(resource, BatchSpanProcessor(OTLPSpanExporter()) if exports(environ, "TRACES") else None)
        # shut down by the run's end (bounded), not again by the interpreter's: see shutdown
        self.logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        if exports(environ, "LOGS"):
            self.logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
        self.logger = self.logger_provider.get_logger(SCOPE)
        readers = (
            [PeriodicExportingMetricReader(OTLPMetricExporter(), export_interval_millis=METRIC_EXPORT_INTERVAL_MS)]
            if exports(environ, "METRICS")
            else []
        )
        self.meter_provider = MeterProvider(resource=resource, metric_readers=readers, shutdown_on_exit=False)
        meter = self.meter_provider.get_meter(SCOPE)
        self.evaluations = meter.create_counter("coder_eval.evaluations", "{evaluation}", "Evaluations by status")
        self.duration = meter.create_histogram(
            "coder_eval.evaluation.duration",
            "s",
            "An evaluation's duration",
            explicit_bucket_boundaries_advisory=DURATION_BOUNDS,
        )
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            "{token}",
            "Tokens per model call",
            explicit_bucket_boundaries_advisory=TOKEN_BOUNDS,
        )
        self.cost = meter.create_histogram(
            "coder_eval.evaluation.cost", "USD", "Spend per evaluation", explicit_bucket_boundaries_advisory=COST_BOUNDS
        )
        self.judge_calls = meter.create_counter("coder_eval.judge.calls", "{call}", "Judge calls, by outcome")
        self.judge_retries = meter.create_counter("coder_eval.judge.retries", "{call}", "Judge API calls repeated")

    # ----------------------------------------------------------------- evaluations

    def trace_id(self, evaluation: Evaluation) -> str | None:
        return f"{self._ids(evaluation)[0]:032x}"

    def _ids(self, evaluation: Evaluation) -> tuple[int, int]:
        """The evaluation's trace id, task.json's once it holds one (a rescore, a resume, the scoring phase in
        another process), and its root span's."""
        trace_id = parsed_trace_id(evaluation.result.trace_id) or attempt_trace_id(evaluation)
        return trace_id, root_span_id(trace_id)

    def stage(self, evaluation: Evaluation, name: str, start_ns: int, end_ns: int) -> None:
        trace_id, root = self._ids(evaluation)
        stage = _new_id()
        self.spans.write(name, (trace_id, stage), root, start_ns, end_ns, {"coder_eval.stage": name})
        if name == "agent":
            self._agent(evaluation, trace_id, stage, start_ns, end_ns)
        elif name == "score":
            self._judges(evaluation, trace_id, stage, end_ns)

    def _agent(self, evaluation: Evaluation, trace_id: int, parent: int, start_ns: int, end_ns: int) -> None:
        """``invoke_agent`` with a ``chat`` span per model round trip and an ``execute_tool`` span per call."""
        result, agent = evaluation.result, evaluation.task.agent
        if agent.resolved_type == "none" or not result.trajectory:
            return
        provider = agent_provider(evaluation)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent.resolved_type,
            "gen_ai.request.model": agent.model or None,
            "gen_ai.provider.name": provider,
            "gen_ai.usage.input_tokens": agent_usage(result).input_tokens,
            "gen_ai.usage.output_tokens": agent_usage(result).output_tokens,
        }
        invoke = _new_id()
        self.spans.write(
            f"invoke_agent {agent.resolved_type}", (trace_id, invoke), parent, start_ns, end_ns, _present(attributes)
        )
        cursor = start_ns
        for turn in result.trajectory:
            turn_start = epoch_ns(turn.started_at) or cursor
            turn_end = max(epoch_ns(turn.ended_at) or turn_start, turn_start)
            attributes = {
                **turn_attributes(turn, agent.model),
                "gen_ai.provider.name": provider,
                "coder_eval.text": content(turn.text, self.capture),
            }
            self.spans.write(
                f"chat {agent.model or agent.resolved_type}",
                (trace_id, _new_id()),
                invoke,
                turn_start,
                reply_end_ns(turn, turn_start, turn_end),
                _present(attributes),
                kind=SpanKind.CLIENT,
            )
            self._count_tokens("chat", provider, agent.model, turn_usage(turn), evaluation)
            for call in turn.calls:  # the GenAI conventions' agent layout: tool calls beside the model calls
                self._tool_call(call, trace_id, invoke, epoch_ns(call.started_at) or turn_start)
            cursor = turn_end
        self._simulated_user(evaluation, trace_id, invoke)

    def _tool_call(self, call: ToolCallRecord, trace_id: int, parent: int, start_ns: int) -> None:
        attributes = {
            **tool_attributes(call),
            "gen_ai.tool.call.arguments": content(call.parameters, self.capture),
            "gen_ai.tool.call.result": content(call.output, self.capture),
        }
        self.spans.write(
            f"execute_tool {call.tool}",
            (trace_id, _new_id()),
            parent,
            start_ns,
            start_ns + int(call.duration_ms * 1e6),
            _present(attributes),
            failed=("tool_error", "the tool call failed") if call.status == "error" else None,
        )

    def _count_tokens(
        self, operation: str, provider: str | None, model: str | None, used: tuple[int, int], evaluation: Evaluation
    ) -> None:
        """One model call's tokens (input, output) in ``gen_ai.client.token.usage``, named as the GenAI conventions
        require; none for what no provider answered (a replay's recorded turn, a recorded user)."""
        if provider is None:
            return
        labels = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model or None,
            "coder_eval.variant_id": evaluation.result.variant_id,
        }
        for token_type, count in zip(("input", "output"), used, strict=True):
            self.tokens.record(count, _present({**labels, "gen_ai.token.type": token_type}))

    def _simulated_user(self, evaluation: Evaluation, trace_id: int, parent: int) -> None:
        """A ``chat`` span and its token points per message of a dialog's simulated user (the opening prompt is the
        task's, not its), naming the model as its requests did; a recorded user asked no model: no model, no
        tokens, no points."""
        simulation = evaluation.result.simulation
        model = simulation.simulator_model if simulation else None
        provider = route_provider(evaluation.context.route.backend) if model else None
        users = [message for message in evaluation.result.dialog if message.role == "user"]
        for message in users:
            start_ns, end_ns = epoch_ns(message.started_at), epoch_ns(message.ended_at)
            if start_ns is None:
                continue
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model,
                "gen_ai.provider.name": provider,
                "gen_ai.usage.input_tokens": message.input_tokens if model else None,
                "gen_ai.usage.output_tokens": message.output_tokens if model else None,
                "coder_eval.role": "simulated_user",
                "coder_eval.dialog.turn": message.turn,
                "coder_eval.text": content(message.text, self.capture),
            }
            ids = (trace_id, _new_id())
            end = end_ns or start_ns
            self.spans.write(
                "chat simulated_user", ids, parent, start_ns, end, _present(attributes), kind=SpanKind.CLIENT
            )
            self._count_tokens("chat", provider, model, (message.input_tokens, message.output_tokens), evaluation)
        unsaid = unrecorded_call(evaluation.result.simulator_token_usage, users)
        if unsaid is not None:
            self._count_tokens("chat", provider, model, unsaid, evaluation)

    def _judges(self, evaluation: Evaluation, trace_id: int, parent: int, end_ns: int) -> None:
        """A ``chat`` span per llm_judge call and an ``invoke_agent`` span per agent_judge run, from their usage
        (none for a reused verdict: it made no call)."""
        provider = route_provider(evaluation.context.route.backend)  # every judge calls the run's route
        for criterion in evaluation.result.criteria:
            usage = criterion.judge_usage
            if usage is None or criterion.reused:  # a reused verdict made no call this time
                continue
            agent = criterion.type == "agent_judge"
            model = str(criterion.details.get("model") or "")
            operation = "invoke_agent" if agent else "chat"
            why = failure_text(criterion.error, "judge_error", self.capture)  # the judge's words only when captured
            duration_ns = int(float(usage.get("duration_s") or 0) * 1e9)
            used = (int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0))
            attributes = {
                "gen_ai.operation.name": operation,
                "gen_ai.request.model": model,
                "gen_ai.provider.name": provider,
                "gen_ai.usage.input_tokens": used[0],
                "gen_ai.usage.output_tokens": used[1],
                "coder_eval.criterion.index": criterion.index,
                "coder_eval.criterion.type": criterion.type,
                "coder_eval.judge.cost_usd": usage.get("cost_usd"),
                "coder_eval.judge.retries": usage.get("retries"),
            }
            self.spans.write(
                f"{operation} {'agent_judge' if agent else model}",
                (trace_id, _new_id()),
                parent,
                end_ns - duration_ns,
                end_ns,
                _present(attributes),
                kind=SpanKind.CLIENT,
                failed=("judge_error", why) if criterion.error else None,
            )
            self._count_tokens(operation, provider, model, used, evaluation)
            self.judge_calls.add(1, {"coder_eval.criterion.type": criterion.type, "error": criterion.error is not None})
            self.judge_retries.add(int(usage.get("retries") or 0), {"coder_eval.criterion.type": criterion.type})

    def evaluation_end(self, evaluation: Evaluation) -> None:
        """The evaluation's root span (derived ids, its start time), the end event, the criterion events, metrics."""
        result = evaluation.result
        ids = self._ids(evaluation)
        link = Link(SpanContext(*run_span_ids(evaluation.run_id), is_remote=True, trace_flags=SAMPLED))
        now = time.time_ns()
        end_attributes = task_end_attributes(result)
        criteria = [criterion_attributes(criterion) for criterion in result.criteria]
        inside = _in_span(*ids)
        for name, attributes in [(TASK_END, end_attributes), *((EVALUATION_RESULT, event) for event in criteria)]:
            body = TASK_END if name == TASK_END else None
            self.logger.emit(
                context=inside,
                event_name=name,
                severity_number=SeverityNumber.INFO,
                body=body,
                attributes=attributes,
                timestamp=now,
            )
        failed = result.final_status != "SUCCESS"
        self.spans.write(
            f"evaluate {result.task_id}",
            ids,
            None,
            epoch_ns(result.started_at) or now,
            now,
            evaluation_attributes(evaluation),
            failed=(result.final_status, evaluation_failure(result, self.capture)) if failed else None,
            events=[
                Event(TASK_END, end_attributes, now),
                *(Event(EVALUATION_RESULT, event, now) for event in criteria),
            ],
            links=[link],
        )
        self._measure(evaluation)

    def _measure(self, evaluation: Evaluation) -> None:
        """The evaluation's count, duration and cost; a --retry-errors attempt labelled so (the ERROR it replaces
        was counted by the run that had it: a counter only grows)."""
        result = evaluation.result
        labels: dict[str, Any] = {"coder_eval.status": result.final_status, "coder_eval.variant_id": result.variant_id}
        if _set_aside(evaluation).is_file():
            labels["coder_eval.retry"] = True
        self.evaluations.add(1, labels)
        self.duration.record(result.duration_s, labels)
        if result.total_cost_usd is not None:
            self.cost.record(result.total_cost_usd, labels)

    # ----------------------------------------------------------------- the run

    def run_end(
        self, run_id: str, started_at: str, results: list[EvaluationResult], passed: bool, attempt: str | None = None
    ) -> None:
        """The run's span; a later ``attempt`` at the run (a --retry-errors) a span of its own under the first."""
        attributes: dict[str, Any] = {
            "coder_eval.run_id": run_id,
            "coder_eval.evaluations": len(results),
            "coder_eval.succeeded": sum(r.success for r in results),
            "coder_eval.passed": passed,
        }
        now = time.time_ns()
        ids = run_span_ids(run_id, attempt)
        first = run_span_ids(run_id)[1] if attempt else None
        self.spans.write(f"run {run_id}", ids, first, epoch_ns(started_at) or now, now, attributes)

    def cli_environment(self, evaluation_trace_id: str | None) -> dict[str, str]:
        """Claude Code's own OTel events and metrics to the same endpoint, tagged with the evaluation's trace id.

        Not when the exporter carries headers: they are often credentials, and
        whatever the CLI holds, its tools can read.
        """
        endpoint = self.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        exporters = {
            f"OTEL_{signal}_EXPORTER": "otlp" if exports(self.environ, signal) else "none"
            for signal in ("LOGS", "METRICS")
        }
        if not endpoint or self.environ.get("OTEL_EXPORTER_OTLP_HEADERS") or "otlp" not in exporters.values():
            return {}
        users = self.environ.get("OTEL_RESOURCE_ATTRIBUTES", "").strip(" ,")
        ours = f"coder_eval.trace_id={evaluation_trace_id or ''}"
        return {
            "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
            **exporters,  # a signal the user turned off, off for the CLI too
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_RESOURCE_ATTRIBUTES": f"{users},{ours}" if users else ours,  # the user's, as the harness's have
            "CLAUDE_CODE_OTEL_SHUTDOWN_TIMEOUT_MS": CLI_EXPORT_WAIT_MS,
            "CLAUDE_CODE_OTEL_FLUSH_TIMEOUT_MS": CLI_EXPORT_WAIT_MS,
        }

    def shutdown(self, within_s: float = SHUTDOWN_S) -> None:
        """Send what is buffered (the run's end): spans, events and the last metrics at once, for ``within_s`` in
        all. Each signal's exporter waits out its own timeout and retries, so a collector that hangs or refuses
        held the run's end ~30 s, one signal after another; what is not sent by then is dropped (its threads end
        with the process)."""
        steps = [self.logger_provider.shutdown, self.meter_provider.shutdown]
        if self.spans.processor is not None:
            steps.insert(0, self.spans.processor.shutdown)
        threads = [threading.Thread(target=step, name="telemetry-shutdown", daemon=True) for step in steps]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + within_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def evaluation_attributes(evaluation: Evaluation) -> dict[str, Any]:
    result, agent = evaluation.result, evaluation.task.agent
    return _present(
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent.resolved_type,
            "gen_ai.request.model": agent.model if agent.resolved_type != "none" else None,  # no model is asked
            "gen_ai.provider.name": agent_provider(evaluation),
            "coder_eval.run_id": result.run_id,
            "coder_eval.task_id": result.task_id,
            "coder_eval.base_task_id": result.base_task_id,
            "coder_eval.row_id": result.row_id,
            "coder_eval.variant_id": result.variant_id,
            "coder_eval.replicate": result.replicate,
            "coder_eval.final_status": result.final_status,
            "coder_eval.score": result.weighted_score,
            "coder_eval.stopped_early": result.stopped_early,
            "coder_eval.early_stop_reason": result.early_stop_reason,
        }
    )


def attempt_trace_id(evaluation: Evaluation) -> int:
    """The trace id of this attempt at the evaluation: its first, from the run id and its folder's place in the run
    folder (``variant/task/NN``, whatever path the run folder is given by); a ``--retry-errors`` attempt's,
    derived from the one of the ERROR it replaces, so that each retry is a trace of its own."""
    first = first_trace_id(evaluation.run_id, evaluation.folder.relative_to(evaluation.run_dir).as_posix())
    replaced = _set_aside(evaluation)
    if not replaced.is_file():
        return first
    return retry_trace_id(_recorded_trace_id(replaced) or first)


def _set_aside(evaluation: Evaluation) -> Path:
    """Where ``--retry-errors`` set aside the ERROR result it runs the evaluation again for (there: a retry)."""
    return evaluation.folder / PREVIOUS_RESULT_FILE


def _recorded_trace_id(path: Path) -> int | None:
    """The trace id a set-aside task.json holds; None when it has none (written without telemetry) or is unread."""
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    trace_id = recorded.get("trace_id") if isinstance(recorded, dict) else None
    return parsed_trace_id(trace_id) if isinstance(trace_id, str) else None


def agent_provider(evaluation: Evaluation) -> str | None:
    """``gen_ai.provider.name`` of the evaluation's agent (None: it asks no model)."""
    agent = evaluation.task.agent
    return provider_name(agent.resolved_type, agent.model, evaluation.context.route.backend)


def agent_usage(result: EvaluationResult) -> TokenUsage:
    """The agent's tokens (``input_tokens``: the whole prompt, cached parts included, as the GenAI conventions
    count it); zeros for an agentless task."""
    return result.total_token_usage or TokenUsage()


def unrecorded_call(spent: TokenUsage | None, users: list[DialogMessage]) -> tuple[int, int] | None:
    """The tokens (input, output) of the simulator call no message records: its last, when it said only the stop
    token or nothing (the dialog ends there); the dialog's total holds them. None: every call is a message."""
    if spent is None:
        return None
    used = (
        spent.input_tokens - sum(message.input_tokens for message in users),
        spent.output_tokens - sum(message.output_tokens for message in users),
    )
    return used if any(used) else None


def task_end_attributes(result: EvaluationResult) -> dict[str, Any]:
    """The guide's ``CoderEval.Task.End`` dimensions, and the evaluation's outcome beside them."""
    return _present(
        {
            "EarlyStopped": result.stopped_early,
            "EarlyStopReason": result.early_stop_reason or "",
            "TaskId": result.task_id,
            "VariantId": result.variant_id,
            "Status": result.final_status,
            "Score": result.weighted_score,
            "Turns": result.turns,
            "InputTokens": agent_usage(result).input_tokens,
            "CacheReadTokens": agent_usage(result).cache_read_input_tokens,
            "CacheCreationTokens": agent_usage(result).cache_creation_input_tokens,
            "OutputTokens": agent_usage(result).output_tokens,
            "CostUsd": result.total_cost_usd,
            "DurationSeconds": result.duration_s,
        }
    )


def criterion_attributes(criterion: CriterionResult) -> dict[str, Any]:
    return _present(
        {
            "gen_ai.evaluation.name": criterion.type,
            "gen_ai.evaluation.score.value": criterion.score,
            "gen_ai.evaluation.score.label": "pass" if criterion.passed else "fail",
            "coder_eval.criterion.index": criterion.index,
            "coder_eval.criterion.description": criterion.description,
            "coder_eval.criterion.gating": criterion.gating,
            "error.type": "criterion_error" if criterion.error else None,
        }
    )


def _present(attributes: dict[str, Any]) -> dict[str, Any]:
    """OpenTelemetry takes no None: an absent value is left out."""
    return {key: value for key, value in attributes.items() if value is not None}
