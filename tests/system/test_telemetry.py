"""Telemetry through the installed CLI: traces to a real backend (Arize Phoenix), events and metrics over OTLP.

One run, three evaluations: a replayed agent that the early-stop watcher stops,
a replayed dialog, and claude-code against the scripted Messages API. Each is one trace whose
root carries the verdict and the guide's ``CoderEval.Task.End`` event; no
prompt, tool argument or key is exported by default; Claude Code's own events
and metrics reach the same endpoint, tagged with the evaluation's trace.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..support.fake_anthropic import Script, Turn
from ..support.helpers import agentless_task, criterion, write_task
from ..support.otlp_receiver import OtlpReceiver, Received
from ..support.phoenix import running_phoenix, spans
from .conftest import SystemCli, anthropic_environment, claude_code_task, key_forms, new_key, replay_task_file

pytestmark = pytest.mark.slow
SECRET_PROMPT = "the prompt is content: never exported by default"


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_phoenix(tmp_path_factory.mktemp("phoenix")) as url:
        yield url


def by_trace(found: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    traces: dict[str, list[dict[str, Any]]] = {}
    for span in found:
        traces.setdefault(span["context"]["trace_id"], []).append(span)
    return traces


def names(trace: list[dict[str, Any]]) -> set[str]:
    return {span["name"] for span in trace}


def test_each_evaluation_is_one_trace_with_its_stages_turns_tools_verdict_and_events(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic, phoenix: str
) -> None:
    key = new_key()
    fake = scripted_anthropic(
        Script([Turn(tools=[("Bash", {"command": "echo hi > out.txt"})]), Turn(text="Done: created out.txt")])
    )
    tasks = tmp_path / "tasks"
    claude_code_task(tasks, "coded", initial_prompt=SECRET_PROMPT)
    stopped_early = {
        "type": "command_executed",
        "description": "ran the tests",
        "tool_name": "Bash",
        "command_pattern": "pytest",
        "stop_early": {"on_pass": "stop"},
    }
    turns = [
        {"calls": [{"tool": "Bash", "command": "echo pytest ran"}]},
        {"calls": [{"tool": "Bash", "command": "true"}]},
    ]
    replay_task_file(tasks, "replayed", turns, initial_prompt=SECRET_PROMPT, success_criteria=[stopped_early])
    dialog = [
        {"text": "Which file?"},
        {"user": "out.txt, please."},
        {"calls": [{"tool": "Bash", "command": "echo x > out.txt"}], "text": "Written."},
    ]
    simulation = {"enabled": True, "persona": "a user", "goal": "a file", "max_turns": 3}
    written = {"type": "file_exists", "description": "wrote it", "path": "out.txt"}
    replay_task_file(tasks, "conversed", dialog, simulation=simulation, success_criteria=[written])
    received = Received()
    with OtlpReceiver(received) as receiver_url:
        env = {
            **anthropic_environment(fake.url, key),
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url,  # events and metrics (ours and Claude Code's)
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{phoenix}/v1/traces",
        }
        outcome, run = system_cli.run(tasks, env=env)
        assert outcome.code == 0, outcome.output

    results = {task: run.result(task) for task in ("coded", "replayed", "conversed")}
    assert all(r["trace_id"] for r in results.values())
    assert {row["task_id"]: row["trace_id"] for row in run.summary["task_results"]} == {
        task: result["trace_id"] for task, result in results.items()
    }
    traces = by_trace(spans(phoenix, expected=20))
    coded, replayed = traces[results["coded"]["trace_id"]], traces[results["replayed"]["trace_id"]]
    for trace in (coded, replayed):
        (root,) = [s for s in trace if s["parent_id"] is None]
        assert {"setup", "pre_run", "agent", "score", "post_run"} <= names(trace)
        assert all(s["parent_id"] == root["context"]["span_id"] for s in trace if s["name"] in ("setup", "score"))
    assert {"invoke_agent claude-code", "chat claude-test", "execute_tool Bash"} <= names(coded)
    (root,) = [s for s in replayed if s["parent_id"] is None]
    assert root["name"] == "evaluate replayed" and root["attributes"]["coder_eval.stopped_early"] is True
    end = next(e for e in root["events"] if e["name"] == "CoderEval.Task.End")
    assert end["attributes"]["EarlyStopped"] is True and end["attributes"]["EarlyStopReason"]
    assert any(e["name"] == "gen_ai.evaluation.result" for e in root["events"])
    (user,) = [s for s in traces[results["conversed"]["trace_id"]] if s["name"] == "chat simulated_user"]
    assert (
        user["attributes"]["coder_eval.role"] == "simulated_user" and user["attributes"]["coder_eval.dialog.turn"] == 2
    )
    run_spans = [s for s in spans(phoenix, expected=20) if s["name"].startswith("run ")]
    assert [s["attributes"]["coder_eval.evaluations"] for s in run_spans] == [3]

    exported = json.dumps(spans(phoenix, expected=20))  # nothing of the content, nothing of the key, by default
    assert SECRET_PROMPT not in exported and "echo hi" not in exported and "echo pytest" not in exported
    assert "out.txt, please" not in exported
    assert not [form for form in key_forms(key).values() if form.decode() in exported]

    ends = [e for e in received.events if e["name"] == "CoderEval.Task.End"]
    assert sorted(e["trace_id"] for e in ends) == sorted(r["trace_id"] for r in results.values())
    assert [e["attributes"]["EarlyStopped"] for e in ends if e["attributes"]["TaskId"] == "replayed"] == [True]
    assert any(e["name"] == "gen_ai.evaluation.result" for e in received.events)
    assert {"coder_eval.evaluations", "coder_eval.evaluation.duration", "gen_ai.client.token.usage"} <= received.metrics
    # Claude Code's own events and metrics, tagged with its evaluation's trace
    assert {"claude_code.token.usage", "claude_code.cost.usage"} <= received.metrics
    cli_events = [e for e in received.events if e["attributes"].get("coder_eval.trace_id")]
    assert cli_events and {e["attributes"]["coder_eval.trace_id"] for e in cli_events} == {results["coded"]["trace_id"]}


def test_without_configuration_nothing_of_opentelemetry_is_imported(tmp_path: Path) -> None:
    """Off by default, and free: an evaluation runs without importing the SDK or an exporter."""
    code = (
        "import sys, os\n"
        "for name in [n for n in os.environ if n.startswith('OTEL_')]: del os.environ[name]\n"
        "from coder_eval_dagster.core.run_context import RunContext\n"
        "context = RunContext.create()\n"
        "assert not context.telemetry.enabled\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry.sdk') or 'exporter' in m], 'imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_evaluate_sends_its_trace_before_it_exits(tmp_path: Path, system_cli: SystemCli) -> None:
    """`coder-eval evaluate` grades one directory as one evaluation: its trace leaves with it, as a run's does."""
    checks = [criterion("file_exists", path="a.txt")]
    task = write_task(tmp_path / "tasks", agentless_task(task_id="graded", success_criteria=checks))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "a.txt").write_text("here\n")
    received = Received()
    with OtlpReceiver(received) as receiver_url:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url}
        graded = system_cli("evaluate", task, workspace, "--run-dir", tmp_path / "graded", env=env)
    assert graded.code == 0, graded.output
    assert {"evaluate graded", "setup", "score"} <= set(received.span_names)
    assert [e["attributes"]["TaskId"] for e in received.events if e["name"] == "CoderEval.Task.End"] == ["graded"]


def test_a_traces_only_endpoint_sends_traces_alone_and_the_run_does_not_wait(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """The docs' Phoenix recipe names a traces endpoint only: the logs and metrics, named for no one, went to the
    SDK's default (localhost:4318), and the run's end waited ~15 s on refused exports, printing SDK errors. A
    failed tool call's span says so in its status too, and its record its exit code."""
    turns = [{"calls": [{"tool": "Bash", "command": "exit 3"}]}]
    task = replay_task_file(tmp_path / "tasks", "traced", turns, success_criteria=[criterion("file_exists", path=".")])
    received = Received()
    with OtlpReceiver(received) as receiver_url:
        env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{receiver_url}/v1/traces"}
        outcome, run = system_cli.run(task, env=env, timeout=60)
    assert outcome.code == 0, outcome.output
    (call,) = run.result("traced")["iterations"][0]["commands"]
    assert call["error_message"] == "Exit code 3"  # as Claude Code's Bash tool says it (it was "failed")
    assert set(received.paths) == {"/v1/traces"}, received.paths
    assert "4318" not in outcome.err and "Failed to export" not in outcome.err, outcome.err
    assert [code for name, code in received.span_statuses if name == "execute_tool Bash"] == [2]  # ERROR
    # with the error.type the GenAI conventions require of a failed operation
    assert [a.get("error.type") for name, a in received.span_attributes if name == "execute_tool Bash"] == [
        "tool_error"
    ]


def test_telemetry_enabled_false_in_dotenv_sends_nothing(tmp_path: Path, system_cli: SystemCli) -> None:
    """coder_eval's docs have every user put TELEMETRY_ENABLED=false in .env: it was said to be left out, and an
    endpoint in the environment exported all the same."""
    checks = [criterion("file_exists", path=".")]
    task = write_task(tmp_path / "tasks", agentless_task(task_id="quiet", success_criteria=checks))
    (system_cli.folder / ".env").write_text("TELEMETRY_ENABLED=false\n")
    received = Received()
    with OtlpReceiver(received) as receiver_url:
        outcome, _ = system_cli.run(task, env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url}, timeout=60)
    assert outcome.code == 0, outcome.output
    assert received.paths == [] and "not read" not in outcome.err, (received.paths, outcome.err)


def test_a_collector_that_never_answers_holds_the_runs_end_for_five_seconds_at_most(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """Each signal's exporter waited out its timeout and retries, one after another: ~31 s after the last verdict,
    deaf to Ctrl-C. A refused OTEL_BSP_* setting stopped the run before it began (exit 3)."""
    task = write_task(
        tmp_path / "tasks", agentless_task(task_id="plain", success_criteria=[criterion("file_exists", path=".")])
    )
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts (the kernel's backlog), never answers
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        outcome = system_cli(
            "run", task, "--runs-dir", tmp_path / "runs", env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
        )
        ended = time.time()
    (summary,) = (tmp_path / "runs").glob("20*/run.json")
    held = ended - summary.stat().st_mtime  # (the run's end, then the exports' flush: a loaded start is not counted)
    assert outcome.code == 0 and held < 9, (held, outcome.output)
    refused = system_cli(
        "run",
        task,
        "--runs-dir",
        tmp_path / "runs",
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "0"},
    )
    assert refused.code == 0, refused.output
    assert "telemetry off: an OTEL_* setting was refused: schedule_delay_millis must be positive" in refused.err


def test_a_logs_only_endpoint_exports_the_events_under_the_users_service_name(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """An endpoint named for logs (or metrics) alone exported nothing; service.name from OTEL_RESOURCE_ATTRIBUTES
    was replaced by coder-eval."""
    task = write_task(
        tmp_path / "tasks", agentless_task(task_id="plain", success_criteria=[criterion("file_exists", path=".")])
    )
    received = Received()
    with OtlpReceiver(received) as receiver_url:
        env = {
            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"{receiver_url}/v1/logs",
            "OTEL_RESOURCE_ATTRIBUTES": "service.name=team-evals",
        }
        outcome, _ = system_cli.run(task, env=env, timeout=60)
    assert outcome.code == 0, outcome.output
    assert set(received.paths) == {"/v1/logs"}, received.paths
    assert [e["attributes"]["TaskId"] for e in received.events if e["name"] == "CoderEval.Task.End"] == ["plain"]
    assert received.services == {"team-evals"}


def test_a_rescore_adds_its_score_spans_and_writes_no_root_or_count_again(
    tmp_path: Path, system_cli: SystemCli
) -> None:
    """A rescore wrote the evaluation's root span and the run's span again, with the same ids (a backend drops
    or double-counts them), and counted the evaluation again."""
    task = write_task(
        tmp_path / "tasks", agentless_task(task_id="plain", success_criteria=[criterion("file_exists", path=".")])
    )
    first, again = Received(), Received()
    with OtlpReceiver(first) as receiver_url:
        outcome, run = system_cli.run(task, env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url}, timeout=60)
    assert outcome.code == 0 and {"evaluate plain", f"run {run.path.name}"} <= set(first.span_names), outcome.output
    with OtlpReceiver(again) as receiver_url:
        rescored = system_cli("rescore", run.path, env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url})
    assert rescored.code == 0, rescored.output
    assert "score" in again.span_names and not [n for n in again.span_names if n.startswith(("evaluate ", "run "))]
    assert (
        not [e for e in again.events if e["name"] == "CoderEval.Task.End"]
        and "coder_eval.evaluations" not in again.metrics
    )


def test_a_span_names_a_model_only_where_one_was_asked_for(tmp_path: Path, system_cli: SystemCli) -> None:
    """A replay without a model said `gen_ai.request.model: ''`, and an agentless evaluation under a variant
    that sets a model named that model, though none was asked (task.json's model_used is null)."""
    turns = [{"calls": [{"tool": "Bash", "command": "true"}], "text": "done"}]
    replayed = replay_task_file(
        tmp_path / "replay", "replayed", turns, success_criteria=[criterion("file_exists", path=".")]
    )
    plain = write_task(
        tmp_path / "plain", agentless_task(task_id="plain", success_criteria=[criterion("file_exists", path=".")])
    )
    experiment = tmp_path / "exp.yaml"
    experiment.write_text("experiment_id: e\nvariants:\n  - variant_id: v\n    agent: {model: claude-opus-4-1}\n")
    received = Received()
    with OtlpReceiver(received) as receiver_url:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver_url}
        for command in (("run", replayed), ("run", plain, "-e", experiment)):
            outcome = system_cli(*command, "--runs-dir", system_cli.runs, env=env)
            assert outcome.code == 0, outcome.output
    named = {name: attributes.get("gen_ai.request.model") for name, attributes in received.span_attributes}
    assert {"evaluate plain", "evaluate replayed", "invoke_agent replay", "chat replay"} <= set(named), named
    assert all(model is None for model in named.values()), named  # neither asked a model
