"""An OTLP/HTTP receiver on 127.0.0.1 for the signals Phoenix does not keep: log records (events) and metrics.

It decodes what the real OpenTelemetry exporters send with OpenTelemetry's
own protobuf messages (``opentelemetry-proto``) and records it. A benchmark
keeps the bodies and decodes them afterwards (``Received(deferred=True)``,
then ``decode_kept``): a collector's own work is not the exporter's cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from .fake_http import LoopbackServer, RecordingHandler


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


@dataclass
class Received:
    paths: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)  # one per log record: name, attributes, trace id
    metrics: set[str] = field(default_factory=set)
    span_names: list[str] = field(default_factory=list)
    span_statuses: list[tuple[str, int]] = field(default_factory=list)  # (name, status code: 2 is ERROR)
    span_attributes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (name, attributes)
    services: set[str] = field(default_factory=set)  # the service.name of each log record's resource
    deferred: bool = False
    kept: list[tuple[str, bytes]] = field(default_factory=list)

    def record(self, path: str, body: bytes) -> None:
        if path.endswith("/v1/logs"):
            self._logs(body)
        elif path.endswith("/v1/metrics"):
            request = ExportMetricsServiceRequest.FromString(body)
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    self.metrics.update(metric.name for metric in scope.metrics)
        elif path.endswith("/v1/traces"):
            traces = ExportTraceServiceRequest.FromString(body)
            for resource_spans in traces.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    self.span_names.extend(span.name for span in scope_spans.spans)
                    self.span_statuses.extend((span.name, span.status.code) for span in scope_spans.spans)
                    self.span_attributes.extend(
                        (span.name, {item.key: _value(item.value) for item in span.attributes})
                        for span in scope_spans.spans
                    )

    def decode_kept(self) -> None:
        kept, self.kept = self.kept, []
        for path, body in kept:
            self.record(path, body)

    def _logs(self, body: bytes) -> None:
        request = ExportLogsServiceRequest.FromString(body)
        for resource in request.resource_logs:
            attributes = {item.key: _value(item.value) for item in resource.resource.attributes}
            self.services.add(attributes.get("service.name"))
            for scope in resource.scope_logs:
                for record in scope.log_records:
                    self.events.append(
                        {
                            "name": record.event_name,
                            "trace_id": record.trace_id.hex(),
                            "attributes": {item.key: _value(item.value) for item in record.attributes},
                        }
                    )


class _Handler(RecordingHandler):
    script: Received

    def do_POST(self) -> None:
        self.script.paths.append(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.script.deferred:
            self.script.kept.append((self.path, body))
        else:
            self.script.record(self.path, body)
        self.send(200, b"", "application/x-protobuf")


class OtlpReceiver(LoopbackServer):
    handler = _Handler
