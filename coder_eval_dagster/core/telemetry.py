"""OpenTelemetry export of runs and evaluations, in the GenAI semantic conventions: off, and free, unless configured.

Configured the standard way, from the environment of the process running the
evaluations (the CLI, a Dagster run worker): ``OTEL_EXPORTER_OTLP_ENDPOINT``
(or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), ``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_SERVICE_NAME`` (default ``coder-eval``), ``OTEL_RESOURCE_ATTRIBUTES``;
``OTEL_SDK_DISABLED=true`` turns it off, ``OTEL_TRACES_EXPORTER=none`` (or
``LOGS``, ``METRICS``) one signal. OTLP over HTTP/protobuf. With none of them
set nothing of OpenTelemetry is imported.

One trace per evaluation. Its id is derived from the run id and the
evaluation's place in the run folder (``variant/task/NN``), so that the
sandbox phase and the scoring phase (two Dagster steps, maybe two processes
or containers, wherever each mounts the folder) add to the same trace, and
is kept in task.json, which a rescore and a resume read it from; a
``--retry-errors`` attempt derives a new one from the attempt it replaces.
The root span's id is derived from the trace id. Each stage is a span when it
ends; the agent stage holds an ``invoke_agent`` span with a ``chat`` span per
model round trip and an ``execute_tool`` span per tool call beside them;
judges and the simulated user are ``chat`` / ``invoke_agent`` spans;
the evaluation's own root span is written when it finishes, with its start
time and its verdict, with the guide's ``CoderEval.Task.End`` event and a
``gen_ai.evaluation.result`` event per criterion (as log records correlated
to the span, and as span events for backends that keep traces only). The
run is a span of its own trace, linked from each evaluation.

No prompt, file content, tool argument or output, agent text or secret is
exported unless ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``
(the GenAI conventions' switch); what is captured then is redacted first. A
failure's status message is then a category of it alone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .secrets import redact, secret_values

if TYPE_CHECKING:
    from .evaluation import Evaluation
    from .models.results import EvaluationResult, ToolCallRecord, TurnRecord

SIGNALS = ("TRACES", "LOGS", "METRICS")
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
TASK_END = "CoderEval.Task.End"
EVALUATION_RESULT = "gen_ai.evaluation.result"
CONTENT_CHARS = 4000
# The GenAI conventions' gen_ai.provider.name of an opencode provider whose prefix is not already it (custom: an
# OpenAI-compatible server of no known provider).
OPENCODE_PROVIDERS: dict[str, str | None] = {"mistral": "mistral_ai", "xai": "x_ai", "custom": None}


# What coder_eval's TELEMETRY_ENABLED (a pydantic bool there) reads as false.
FALSE_WORDS = frozenset({"0", "false", "f", "no", "n", "off"})


def configured(environ: Mapping[str, str]) -> bool:
    """An OTLP endpoint is set, and neither OpenTelemetry's switch nor coder_eval's (TELEMETRY_ENABLED=false) is off."""
    switched_off = environ.get("OTEL_SDK_DISABLED", "").lower() == "true"
    if switched_off or environ.get("TELEMETRY_ENABLED", "").strip().lower() in FALSE_WORDS:
        return False
    return any(exports(environ, signal) for signal in SIGNALS)


def exports(environ: Mapping[str, str], signal: str) -> bool:
    """Whether ``signal`` (TRACES, LOGS, METRICS) is sent: an OTLP endpoint is named for it (its own, or the one
    for all), and ``OTEL_<SIGNAL>_EXPORTER`` does not turn it off (``none``, the SDK's way)."""
    if environ.get(f"OTEL_{signal}_EXPORTER", "").strip().lower() == "none":
        return False
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"))


def _derived(text: str, size: int) -> int:
    """An id of ``size`` bytes every process derives alike from ``text`` (never 0: OpenTelemetry's invalid id)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:size], "big") or 1


def first_trace_id(run_id: str, place: str) -> int:
    """An evaluation's trace id, from the run id and its folder's ``place`` in the run folder (``variant/task/NN``):
    the same in every process and container, whatever path each reaches the run folder by."""
    return _derived(f"{run_id}\0{place}", 16)


def retry_trace_id(replaced: int) -> int:
    """The trace id of a ``--retry-errors`` attempt, from the one it replaces: a trace of its own (its spans would
    otherwise repeat the ERROR's ids, and a backend keeps the first span of an id)."""
    return _derived(f"{replaced:032x}\0retry", 16)


def root_span_id(trace_id: int) -> int:
    """The evaluation's root span: derived from its trace id, so that a rescore, knowing task.json's trace id
    alone, puts its spans under it."""
    return _derived(f"{trace_id:032x}\0root", 8)


def parsed_trace_id(text: str | None) -> int | None:
    """A trace id as task.json holds it (32 hex digits); None for none, or one not so written."""
    if text is None or len(text) != 32:
        return None
    try:
        return int(text, 16) or None
    except ValueError:
        return None


def run_span_ids(run_id: str, attempt: str | None = None) -> tuple[int, int]:
    """The run's trace id and the span id of its span: the first attempt's derived from the run id alone (every
    evaluation links to it), a later one's (a ``--retry-errors``, a sequential A/B's next batch) from its
    ``attempt`` too."""
    return _derived(f"{run_id}\0run", 16), _derived(f"{run_id}\0run\0{attempt or ''}", 8)


def epoch_ns(moment: datetime | float | str | None) -> int | None:
    """Nanoseconds since the epoch of an ISO time, a datetime or epoch seconds (None stays None)."""
    if moment is None:
        return None
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    if isinstance(moment, datetime):
        return int(moment.timestamp() * 1e9)
    return int(moment * 1e9)


class Telemetry:
    """No telemetry: what a run gets when nothing is configured. Every method is free."""

    enabled = False

    def trace_id(self, evaluation: Evaluation) -> str | None:
        return None

    def stage(self, evaluation: Evaluation, name: str, start_ns: int, end_ns: int) -> None:
        pass

    def evaluation_end(self, evaluation: Evaluation) -> None:
        pass

    def run_end(
        self, run_id: str, started_at: str, results: list[EvaluationResult], passed: bool, attempt: str | None = None
    ) -> None:
        pass

    def cli_environment(self, evaluation_trace_id: str | None) -> dict[str, str]:
        """Variables that point an agent CLI's own telemetry at the same endpoint (none when off)."""
        return {}

    def shutdown(self) -> None:
        pass


def content(value: object, capture: bool) -> str | None:
    """Text exported only when content capture is on, redacted and capped; a structure (a tool call's arguments)
    as JSON, each of its strings redacted before JSON escapes a secret's quote or newline out of recognition."""
    if not capture or value is None:
        return None
    if isinstance(value, str):
        return redact(value)[:CONTENT_CHARS]
    values = secret_values()
    return redact(json.dumps(_redacted_strings(value, values), default=str, ensure_ascii=False), values)[:CONTENT_CHARS]


def failure_text(text: str | None, kind: str, capture: bool) -> str:
    """A failed span's status description: ``kind`` (a category, no content), or with content capture ``text``,
    redacted before it is cut (cut first, a key across the cut kept its first characters)."""
    return (content(text, capture) if text else None) or kind


def evaluation_failure(result: EvaluationResult, capture: bool) -> str:
    """The root span's status description of an evaluation that did not succeed. Without content capture, what
    the harness says of it without the task's or the model's words: its own message up to the detail
    (``pre_run command 1 failed (exit code 3)``, not the command), or for an agent's error (its CLI's, its API's
    words) the category task.json's error_details gives it."""
    details = result.error_details or {}
    if result.error and details.get("component") == "agent" and result.final_status == "ERROR":
        kind = str(details.get("error_category") or result.final_status)
    else:
        kind = redact((result.error or result.final_status).partition(": ")[0])
    return failure_text(result.error, kind, capture)


def _redacted_strings(value: object, values: list[str]) -> object:
    if isinstance(value, str):
        return redact(value, values)
    if isinstance(value, dict):
        return {key: _redacted_strings(item, values) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted_strings(item, values) for item in value]
    return value


def provider_name(agent_type: str, model: str | None, backend: str) -> str | None:
    """The GenAI conventions' ``gen_ai.provider.name`` of the model an agent of this type asks, on the run's route
    (``backend``) for claude-code, by the model's prefix for opencode; None for an agent that asks none (a
    replay, no agent) or a provider not known."""
    if agent_type == "claude-code":
        return route_provider(backend)
    if agent_type == "codex":
        return "openai"
    if agent_type == "opencode" and model and "/" in model:
        prefix = model.partition("/")[0]
        return OPENCODE_PROVIDERS.get(prefix, prefix)
    return None


def route_provider(backend: str) -> str:
    """The provider of the run's route (the judges', the simulated user's, claude-code's)."""
    return "aws.bedrock" if backend == "bedrock" else "anthropic"


def turn_usage(turn: TurnRecord) -> tuple[int, int]:
    """A turn's input tokens as the GenAI conventions count them (the whole prompt, cached parts too) and output."""
    return turn.input_tokens + turn.cache_read_input_tokens + turn.cache_creation_input_tokens, turn.output_tokens


def turn_attributes(turn: TurnRecord, model: str | None) -> dict[str, Any]:
    input_tokens, output_tokens = turn_usage(turn)
    return {
        "gen_ai.operation.name": "chat",
        **({"gen_ai.request.model": model} if model else {}),  # a replay without a model names none
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
        "coder_eval.turn": turn.index,
    }


def reply_end_ns(turn: TurnRecord, start_ns: int, end_ns: int) -> int:
    """When the model's reply of a turn (``start_ns`` to ``end_ns``, the next turn's start) ended. A turn records no
    such time: the start of its first tool call stands for it (the model had asked for the call: the schema's
    ``generation_completed_at``); a turn without a call keeps its end."""
    starts = [moment for moment in (epoch_ns(call.started_at) for call in turn.calls) if moment is not None]
    return max(start_ns, min([end_ns, *starts]))


def tool_attributes(call: ToolCallRecord) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.tool,
        "gen_ai.tool.call.id": call.tool_id,  # as task.json records the call
        "coder_eval.tool.status": call.status,
    }
