"""The exporting side of ``telemetry``: OpenTelemetry's SDK and OTLP/HTTP exporters, imported only when configured.

The providers are the run's own (never the process-global ones), so a
library caller's own OpenTelemetry set-up is left alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from .models.results import TokenUsage
from .simulation import simulator_model
from .telemetry import (
    CAPTURE_CONTENT,
    EVALUATION_RESULT,
    TASK_END,
    Telemetry,
    content,
    epoch_ns,
    run_span_ids,
    tool_attributes,
    trace_ids,
    turn_attributes,
)

if TYPE_CHECKING:
    from .evaluation import Evaluation
    from .models.results import CriterionResult, EvaluationResult

SCOPE = "coder_eval_dagster"
METRIC_EXPORT_INTERVAL_MS = 10_000


class _DerivedIds(IdGenerator):
    """Random ids, except for the spans every process must give the same ids (an evaluation's root, the run)."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()
        self._next = threading.local()

    @contextmanager
    def deriving(self, trace_id: int, span_id: int) -> Iterator[None]:
        self._next.ids = (trace_id, span_id)
        try:
            yield
        finally:
            self._next.ids = None

    def generate_trace_id(self) -> int:
        ids = getattr(self._next, "ids", None)
        return ids[0] if ids else self._random.generate_trace_id()

    def generate_span_id(self) -> int:
        ids = getattr(self._next, "ids", None)
        return ids[1] if ids else self._random.generate_span_id()


def _parent(trace_id: int, span_id: int) -> Context:
    """A context whose current span is the one with these ids (written by now, or later, maybe elsewhere)."""
    span = NonRecordingSpan(SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)))
    return trace.set_span_in_context(span)


class OtlpTelemetry(Telemetry):
    enabled = True

    def __init__(self, environ: Mapping[str, str]):
        self.environ = environ
        self.capture = environ.get(CAPTURE_CONTENT, "").lower() == "true"
        resource = Resource.create({"service.name": environ.get("OTEL_SERVICE_NAME") or "coder-eval"})
        self.ids = _DerivedIds()
        self.tracer_provider = TracerProvider(resource=resource, id_generator=self.ids)
        self.tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        self.tracer = self.tracer_provider.get_tracer(SCOPE)
        self.logger_provider = LoggerProvider(resource=resource)
        self.logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
        self.logger = self.logger_provider.get_logger(SCOPE)
        reader = PeriodicExportingMetricReader(OTLPMetricExporter(), export_interval_millis=METRIC_EXPORT_INTERVAL_MS)
        self.meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        meter = self.meter_provider.get_meter(SCOPE)
        self.evaluations = meter.create_counter("coder_eval.evaluations", "{evaluation}", "Evaluations by status")
        self.duration = meter.create_histogram("coder_eval.evaluation.duration", "s", "An evaluation's duration")
        self.tokens = meter.create_histogram("gen_ai.client.token.usage", "{token}", "Tokens per evaluation")
        self.cost = meter.create_histogram("coder_eval.evaluation.cost", "USD", "Spend per evaluation")
        self.judge_calls = meter.create_counter("coder_eval.judge.calls", "{call}", "Judge calls, by outcome")
        self.judge_retries = meter.create_counter("coder_eval.judge.retries", "{call}", "Judge API calls repeated")

    # ----------------------------------------------------------------- evaluations

    def trace_id(self, evaluation: Evaluation) -> str | None:
        return f"{self._ids(evaluation)[0]:032x}"

    def _ids(self, evaluation: Evaluation) -> tuple[int, int]:
        return trace_ids(evaluation.run_id, str(evaluation.folder))

    def stage(self, evaluation: Evaluation, name: str, start_ns: int, end_ns: int) -> None:
        parent = _parent(*self._ids(evaluation))
        span = self.tracer.start_span(name, context=parent, start_time=start_ns, attributes={"coder_eval.stage": name})
        if name == "agent":
            self._agent(evaluation, trace.set_span_in_context(span), start_ns, end_ns)
        elif name == "score":
            self._judges(evaluation, trace.set_span_in_context(span), end_ns)
        span.end(end_time=end_ns)

    def _agent(self, evaluation: Evaluation, parent: Context, start_ns: int, end_ns: int) -> None:
        """``invoke_agent`` with a ``chat`` span per model round trip and an ``execute_tool`` span per call."""
        result, agent = evaluation.result, evaluation.task.agent
        if agent.resolved_type == "none" or not result.trajectory:
            return
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent.resolved_type,
            "gen_ai.request.model": agent.model or "",
            "gen_ai.usage.input_tokens": agent_usage(result).input_tokens,
            "gen_ai.usage.output_tokens": agent_usage(result).output_tokens,
        }
        span = self.tracer.start_span(
            f"invoke_agent {agent.resolved_type}", context=parent, start_time=start_ns, attributes=attributes
        )
        inside = trace.set_span_in_context(span)
        cursor = start_ns
        for turn in result.trajectory:
            turn_start = epoch_ns(turn.started_at) or cursor
            turn_end = epoch_ns(turn.ended_at) or turn_start
            chat = self.tracer.start_span(
                f"chat {agent.model or agent.resolved_type}",
                context=inside,
                kind=SpanKind.CLIENT,
                start_time=turn_start,
                attributes=_present(
                    {**turn_attributes(turn, agent.model), "coder_eval.text": content(turn.text, self.capture)}
                ),
            )
            for call in turn.calls:
                call_start = epoch_ns(call.started_at) or turn_start
                call_attributes = {
                    **tool_attributes(call),
                    "gen_ai.tool.call.arguments": content(call.parameters, self.capture),
                    "gen_ai.tool.call.result": content(call.output, self.capture),
                }
                tool = self.tracer.start_span(
                    f"execute_tool {call.tool}",
                    context=trace.set_span_in_context(chat),
                    start_time=call_start,
                    attributes=_present(call_attributes),
                )
                tool.end(end_time=call_start + int(call.duration_ms * 1e6))
            chat.end(end_time=max(turn_end, turn_start))
            cursor = max(turn_end, turn_start)
        self._simulated_user(evaluation, inside)
        span.end(end_time=end_ns)

    def _simulated_user(self, evaluation: Evaluation, parent: Context) -> None:
        """A ``chat`` span per message of a dialog's simulated user (the opening prompt is the task's, not its)."""
        model = simulator_model(evaluation.task)
        for message in evaluation.result.dialog:
            start_ns, end_ns = epoch_ns(message.started_at), epoch_ns(message.ended_at)
            if message.role != "user" or start_ns is None:
                continue
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model,
                "coder_eval.role": "simulated_user",
                "coder_eval.dialog.turn": message.turn,
                "coder_eval.tokens": message.tokens,
                "coder_eval.text": content(message.text, self.capture),
            }
            chat = self.tracer.start_span(
                "chat simulated_user",
                context=parent,
                kind=SpanKind.CLIENT,
                start_time=start_ns,
                attributes=_present(attributes),
            )
            chat.end(end_time=end_ns or start_ns)

    def _judges(self, evaluation: Evaluation, parent: Context, end_ns: int) -> None:
        """A ``chat`` span per llm_judge call and an ``invoke_agent`` span per agent_judge run, from their usage
        (none for a reused verdict: it made no call)."""
        for criterion in evaluation.result.criteria:
            usage = criterion.judge_usage
            if usage is None or criterion.reused:  # a reused verdict made no call this time
                continue
            agent = criterion.type == "agent_judge"
            model = str(criterion.details.get("model") or "")
            operation = "invoke_agent" if agent else "chat"
            duration_ns = int(float(usage.get("duration_s") or 0) * 1e9)
            attributes = {
                "gen_ai.operation.name": operation,
                "gen_ai.request.model": model,
                "gen_ai.usage.input_tokens": int(usage.get("input_tokens") or 0),
                "gen_ai.usage.output_tokens": int(usage.get("output_tokens") or 0),
                "coder_eval.criterion.index": criterion.index,
                "coder_eval.criterion.type": criterion.type,
                "coder_eval.judge.cost_usd": usage.get("cost_usd"),
                "coder_eval.judge.retries": usage.get("retries"),
            }
            name = f"{operation} {'agent_judge' if agent else model}"
            span = self.tracer.start_span(
                name,
                context=parent,
                kind=SpanKind.CLIENT,
                start_time=end_ns - duration_ns,
                attributes=_present(attributes),
            )
            if criterion.error:
                span.set_status(trace.Status(trace.StatusCode.ERROR, criterion.error[:200]))
            span.end(end_time=end_ns)
            self.judge_calls.add(1, {"coder_eval.criterion.type": criterion.type, "error": criterion.error is not None})
            self.judge_retries.add(int(usage.get("retries") or 0), {"coder_eval.criterion.type": criterion.type})

    def evaluation_end(self, evaluation: Evaluation) -> None:
        """The evaluation's root span (derived ids, its start time), the end event, the criterion events, metrics."""
        result = evaluation.result
        trace_id, span_id = self._ids(evaluation)
        attributes = evaluation_attributes(evaluation)
        run_trace, run_span = run_span_ids(evaluation.run_id)
        link = Link(SpanContext(run_trace, run_span, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)))
        started = epoch_ns(result.started_at) or time.time_ns()
        with self.ids.deriving(trace_id, span_id):
            span = self.tracer.start_span(
                f"evaluate {result.task_id}", start_time=started, attributes=attributes, links=[link]
            )
        if result.final_status != "SUCCESS":
            span.set_status(trace.Status(trace.StatusCode.ERROR, result.error or result.final_status))
        inside = trace.set_span_in_context(span)
        end_attributes = task_end_attributes(result)
        span.add_event(TASK_END, end_attributes)
        self.logger.emit(
            context=inside,
            event_name=TASK_END,
            severity_number=SeverityNumber.INFO,
            body=TASK_END,
            attributes=end_attributes,
        )
        for criterion in result.criteria:
            event = criterion_attributes(criterion)
            span.add_event(EVALUATION_RESULT, event)
            self.logger.emit(
                context=inside, event_name=EVALUATION_RESULT, severity_number=SeverityNumber.INFO, attributes=event
            )
        span.end()
        self._measure(result)

    def _measure(self, result: EvaluationResult) -> None:
        labels = {"coder_eval.status": result.final_status, "coder_eval.variant_id": result.variant_id}
        self.evaluations.add(1, labels)
        self.duration.record(result.duration_s, labels)
        usage = result.total_token_usage
        if usage is not None:  # an evaluation that called no model is not a zero in the token histogram
            self.tokens.record(usage.input_tokens, {**labels, "gen_ai.token.type": "input"})
            self.tokens.record(usage.output_tokens, {**labels, "gen_ai.token.type": "output"})
        if result.total_cost_usd is not None:
            self.cost.record(result.total_cost_usd, labels)

    # ----------------------------------------------------------------- the run

    def run_end(self, run_id: str, started_at: str, results: list[EvaluationResult], passed: bool) -> None:
        attributes: dict[str, Any] = {
            "coder_eval.run_id": run_id,
            "coder_eval.evaluations": len(results),
            "coder_eval.succeeded": sum(r.success for r in results),
            "coder_eval.passed": passed,
        }
        with self.ids.deriving(*run_span_ids(run_id)):
            span = self.tracer.start_span(f"run {run_id}", start_time=epoch_ns(started_at), attributes=attributes)
        span.end()

    def cli_environment(self, evaluation_trace_id: str | None) -> dict[str, str]:
        """Claude Code's own OTel events and metrics to the same endpoint, tagged with the evaluation's trace id.

        Not when the exporter carries headers: they are often credentials, and
        whatever the CLI holds, its tools can read.
        """
        endpoint = self.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        if not endpoint or self.environ.get("OTEL_EXPORTER_OTLP_HEADERS"):
            return {}
        return {
            "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
            "OTEL_LOGS_EXPORTER": "otlp",
            "OTEL_METRICS_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_RESOURCE_ATTRIBUTES": f"coder_eval.trace_id={evaluation_trace_id or ''}",
        }

    def shutdown(self) -> None:
        """Send what is buffered (the run's end): spans, events, then the last metrics."""
        for provider in (self.tracer_provider, self.logger_provider, self.meter_provider):
            provider.shutdown()


def evaluation_attributes(evaluation: Evaluation) -> dict[str, Any]:
    result, agent = evaluation.result, evaluation.task.agent
    return _present(
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent.resolved_type,
            "gen_ai.request.model": agent.model,
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


def agent_usage(result: EvaluationResult) -> TokenUsage:
    """The agent's tokens (``input_tokens``: the whole prompt, cached parts included, as the GenAI conventions
    count it); zeros for an agentless task."""
    return result.total_token_usage or TokenUsage()


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
