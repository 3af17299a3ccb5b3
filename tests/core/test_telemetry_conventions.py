"""Telemetry's pure parts: the provider a model call names, the signals the environment turns on or off, content as
JSON, and what Claude Code's own telemetry is given when the user turned a signal off."""

from __future__ import annotations

import json

import pytest

from coder_eval_dagster.core.models.results import EvaluationResult, ToolCallRecord, TurnRecord
from coder_eval_dagster.core.telemetry import (
    CONTENT_CHARS,
    configured,
    content,
    evaluation_failure,
    exports,
    failure_text,
    provider_name,
    reply_end_ns,
)
from coder_eval_dagster.core.telemetry_export import OtlpTelemetry

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}


@pytest.mark.parametrize(
    ("agent_type", "model", "backend", "provider"),
    [
        ("claude-code", "claude-sonnet-4-6", "direct", "anthropic"),
        ("claude-code", "claude-sonnet-4-6", "bedrock", "aws.bedrock"),
        ("codex", None, "direct", "openai"),  # Codex asks its default model of OpenAI
        ("opencode", "anthropic/claude-sonnet-4-6", "bedrock", "anthropic"),  # its own provider, not the route
        ("opencode", "mistral/devstral", "direct", "mistral_ai"),  # the conventions' name
        ("opencode", "openrouter/qwen/qwen3-coder", "direct", "openrouter"),
        ("opencode", "custom/local-model", "direct", None),  # an OpenAI-compatible server of no known provider
        ("replay", "claude-sonnet-4-6", "direct", None),  # a recording: no model is asked
        ("none", None, "direct", None),
    ],
)
def test_a_model_call_names_the_provider_it_is_asked_of(
    agent_type: str, model: str | None, backend: str, provider: str | None
) -> None:
    assert provider_name(agent_type, model, backend) == provider


def test_a_signal_exporter_of_none_turns_that_signal_off_and_all_three_off_is_no_telemetry() -> None:
    assert exports({**ENDPOINT, "OTEL_LOGS_EXPORTER": "None "}, "LOGS") is False
    assert exports({**ENDPOINT, "OTEL_LOGS_EXPORTER": "none"}, "TRACES") is True
    assert exports({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:9/v1/traces"}, "METRICS") is False
    all_off = {f"OTEL_{signal}_EXPORTER": "none" for signal in ("TRACES", "LOGS", "METRICS")}
    assert configured({**ENDPOINT, **all_off}) is False  # nothing of OpenTelemetry is imported for nothing
    assert configured({**ENDPOINT, **all_off, "OTEL_TRACES_EXPORTER": "otlp"}) is True


def test_claude_codes_own_telemetry_keeps_a_signal_the_user_turned_off_off() -> None:
    logs_off = OtlpTelemetry({**ENDPOINT, "OTEL_LOGS_EXPORTER": "none", "OTEL_TRACES_EXPORTER": "none"})
    given = logs_off.cli_environment("ab" * 16)
    assert (given["OTEL_LOGS_EXPORTER"], given["OTEL_METRICS_EXPORTER"]) == ("none", "otlp")
    both_off = OtlpTelemetry({**ENDPOINT, "OTEL_LOGS_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"})
    assert both_off.cli_environment("ab" * 16) == {}
    for telemetry in (logs_off, both_off):
        telemetry.shutdown(within_s=0.1)


def test_a_tool_calls_arguments_are_json_with_secrets_redacted_even_those_json_escapes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """They were a Python repr; a secret holding a quote is escaped by JSON, so its strings are redacted first."""
    secret = 'pa"ss\\word-1234'
    monkeypatch.setenv("DEPLOY_API_KEY", secret)
    arguments = {"command": f"deploy --token '{secret}'", "timeout": 30, "paths": ["a", None]}
    exported = content(arguments, capture=True)
    assert exported is not None and secret not in exported and "ss\\\\word" not in exported, exported
    assert json.loads(exported) == {"command": "deploy --token '***'", "timeout": 30, "paths": ["a", None]}
    assert content(arguments, capture=False) is None


def test_a_failures_status_is_a_category_without_capture_and_with_it_redacted_before_it_is_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A judge's error was cut at 200 characters before redaction: a key across the cut kept its first characters."""
    key = "sk-ant-api03-" + "k" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    long = "x" * (CONTENT_CHARS - 10) + key
    assert failure_text(long, "judge_error", capture=False) == "judge_error"
    assert key[:10] not in failure_text(long, "judge_error", capture=True)
    pre_run = EvaluationResult(
        run_id="r",
        task_id="t",
        variant_id="v",
        agent_type="none",
        final_status="ERROR",
        error="pre_run command 1 failed (exit code 3): rm x",
    )
    assert evaluation_failure(pre_run, capture=False) == "pre_run command 1 failed (exit code 3)"
    assert evaluation_failure(pre_run, capture=True).endswith(": rm x")
    crashed = pre_run.model_copy(
        update={
            "error": "API Error 529 overloaded",
            "error_details": {"error_category": "agent_api_error", "component": "agent"},
        }
    )
    assert evaluation_failure(crashed, capture=False) == "agent_api_error"


@pytest.mark.parametrize("value", ["0", "false", "F", "no", "N", "off", " Off "])
def test_telemetry_enabled_reads_false_as_a_setting_does(value: str) -> None:
    assert configured({**ENDPOINT, "TELEMETRY_ENABLED": value}) is False
    assert configured({**ENDPOINT, "TELEMETRY_ENABLED": "1"}) is True


def test_claude_codes_own_telemetry_keeps_the_users_resource_attributes_and_waits_little_at_its_exit() -> None:
    telemetry = OtlpTelemetry({**ENDPOINT, "OTEL_RESOURCE_ATTRIBUTES": "team=evals,"})
    given = telemetry.cli_environment("ab" * 16)
    assert given["OTEL_RESOURCE_ATTRIBUTES"] == f"team=evals,coder_eval.trace_id={'ab' * 16}"
    assert int(given["CLAUDE_CODE_OTEL_SHUTDOWN_TIMEOUT_MS"]) <= 500
    telemetry.shutdown(within_s=0.1)


def test_a_chat_span_ends_where_the_models_reply_did_when_a_tool_call_says_so() -> None:
    call = ToolCallRecord(turn=1, seq=1, tool="Bash", started_at=10.5)
    assert reply_end_ns(TurnRecord(index=1, calls=[call]), 10 * 10**9, 12 * 10**9) == 10_500_000_000
    assert reply_end_ns(TurnRecord(index=1), 10 * 10**9, 12 * 10**9) == 12 * 10**9  # no call: as it was
