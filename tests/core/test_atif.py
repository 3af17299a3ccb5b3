"""ATIF (Harbor's Agent Trajectory Interchange Format, RFC 0001 at v1.7): read for the replay agent, written by export.

The files under tests/data/atif/ are the RFC's examples: its section IV
example (a ReAct agent's two tool calls), a Claude Code session as Harbor
records one (absolute paths in its working folder, cache writes in
``metrics.extra``), and its section VII context compaction with an embedded
subagent trajectory (v1.7).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from coder_eval_dagster.core.atif import atif_json, replay_trajectory, to_atif
from coder_eval_dagster.core.models.atif import Trajectory as AtifTrajectory
from coder_eval_dagster.core.models.results import DialogMessage, EvaluationResult, ToolCallRecord, TurnRecord
from coder_eval_dagster.core.problems import InvalidInput
from coder_eval_dagster.core.resolution import load_trajectory
from coder_eval_dagster.core.transcript import UserMessage, conversation

from ..support.helpers import criterion, evaluate_task, replay_task, run_cli

DATA = Path(__file__).parent.parent / "data" / "atif"


def read(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def test_the_rfc_example_replays_its_calls_and_usage() -> None:
    trajectory = load_trajectory(DATA / "rfc_stock_price.json")
    first, last = trajectory.turns
    assert [(c.tool, c.parameters) for c in first.calls] == [
        ("financial_search", {"ticker": "GOOGL", "metric": "price"}),
        ("financial_search", {"ticker": "GOOGL", "metric": "volume"}),
    ]
    assert first.text == "I will search for the current trading price and volume for GOOGL."
    # prompt_tokens hold the cached part: 520 - 200 uncached
    assert first.usage is not None and first.usage.model_dump() == {
        "input_tokens": 320,
        "output_tokens": 80,
        "cache_read_input_tokens": 200,
        "cache_creation_input_tokens": 0,
        "cost_usd": 0.00045,
        "cost_source": None,  # the RFC's example says none: the figure is the session's own
    }
    assert last.calls == [] and last.text is not None and last.text.startswith("As of October 11, 2025")


def test_a_claude_code_session_plays_in_the_sandbox(tmp_path: Path) -> None:
    """Its absolute paths under the session's working folder (/app) land in the sandbox; Edit's names are mapped."""
    shutil.copy(DATA / "claude_code_session.json", tmp_path / "session.json")
    task = replay_task(
        agent={"type": "replay", "trajectory": "session.json"},
        success_criteria=[criterion("file_contains", path="hello.txt", includes=["Hello, world!\n"])],
    )
    result = evaluate_task(tmp_path, task)
    assert result.final_status == "SUCCESS", result.error
    write, edit, bash = [call for turn in result.trajectory for call in turn.calls]
    assert (write.tool, write.parameters["path"], write.status) == ("Write", "hello.txt", "success")
    assert (edit.parameters["old"], edit.parameters["new"], edit.status) == ("world?", "world!", "success")
    assert bash.output is not None and bash.output.strip() == "Hello, world!"
    first = result.trajectory[0]
    assert (first.input_tokens, first.cache_read_input_tokens, first.cache_creation_input_tokens) == (2, 13788, 5117)
    assert result.trajectory[-1].text == "Created `/app/hello.txt` containing `Hello, world!`."


def test_compaction_copied_context_and_subagents_are_read_not_replayed() -> None:
    """System steps and copied context are not replayed; a later user message is a dialog's next exchange."""
    trajectory = load_trajectory(DATA / "rfc_compaction.json")
    assert [turn.user or [c.tool for c in turn.calls] for turn in trajectory.turns] == [
        ["Write"],
        "Add topic Y.",
        ["Bash"],
    ]


def test_validate_takes_an_atif_file() -> None:
    outcome = run_cli("validate", DATA / "claude_code_session.json")
    assert (outcome.code, outcome.out.strip()) == (0, f"OK {DATA / 'claude_code_session.json'}")


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda d: d["steps"][1].update(step_id=5), "steps.1.step_id", "numbered 1, 2, 3"),
        (lambda d: d["steps"][0].update(tool_calls=[]), "steps.0.tool_calls", "only on a step whose source is agent"),
        (lambda d: d["steps"][1].update(source="robot"), "steps.1.source", "Input should be"),
        (
            lambda d: d["steps"][1]["tool_calls"][0]["arguments"].pop("content"),
            "steps.1.tool_calls.0.arguments.content",
            "a Write call needs 'content'",
        ),
        (lambda d: d.update(schema_version="ATIF-v9.9"), "schema_version", "Input should be"),
        (
            lambda d: d["steps"][1].update(tool_call=[]),
            "steps.1.tool_call",
            "not in ATIF-v1.7) (did you mean `tool_calls`",
        ),
    ],
)
def test_an_invalid_file_names_its_line_and_field(tmp_path: Path, change: Any, field: str, message: str) -> None:
    data = read("claude_code_session.json")
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    with pytest.raises(InvalidInput) as caught:
        load_trajectory(path)
    problem = caught.value.problems[0]
    assert (problem.path, problem.field) == (str(path), field) and message in problem.message, problem
    assert problem.line is not None and problem.line > 1


def turn(index: int, text: str | None, *calls: tuple[str, dict[str, Any], str | None], **usage: Any) -> TurnRecord:
    records = [
        ToolCallRecord(turn=index, seq=seq, tool=tool, parameters=params, status="success", output=output)
        for seq, (tool, params, output) in enumerate(calls, start=1)
    ]
    return TurnRecord(index=index, text=text, calls=records, **usage)


def result_of(turns: list[TurnRecord], dialog: list[DialogMessage] | None = None) -> EvaluationResult:
    return EvaluationResult(
        run_id="r", task_id="t", base_task_id="t", variant_id="v", replicate=1, agent_type="claude-code",
        model="claude-test", trajectory=turns, dialog=dialog or [], final_status="SUCCESS", success=True,
    )  # fmt: skip


def test_export_writes_valid_atif_that_replays_to_the_same_turns() -> None:
    turns = [
        turn(1, "Writing it.", ("Write", {"path": "a.py", "content": "x = 1\n"}, None),
        ("Bash", {"command": "python a.py"}, ""), input_tokens=10, output_tokens=5, cache_read_input_tokens=100,
        cache_creation_input_tokens=7, cost_usd=0.002),
        turn(2, "Done.", output_tokens=3),
    ]  # fmt: skip
    document = to_atif(result_of(turns), "Create a.py")
    written = json.loads(atif_json(document))
    assert written["schema_version"] == "ATIF-v1.7" and AtifTrajectory.model_validate(written) == document
    assert [step["source"] for step in written["steps"]] == ["user", "agent", "agent"]
    agent = written["steps"][1]
    assert agent["metrics"] == {
        "prompt_tokens": 117,
        "completion_tokens": 5,
        "cached_tokens": 100,
        "cost_usd": 0.002,
        "extra": {"cache_creation_input_tokens": 7},
    }
    assert agent["observation"]["results"][1] == {"source_call_id": "call-1-2", "content": ""}
    assert written["final_metrics"]["total_steps"] == 3
    replayed = replay_trajectory(written, "x.json", lambda loc: 1).turns
    assert [(c.tool, c.parameters) for c in replayed[0].calls] == [(c.tool, c.parameters) for c in turns[0].calls]
    usage = replayed[0].usage
    assert usage is not None and (usage.input_tokens, usage.cache_read_input_tokens) == (10, 100)
    assert (usage.cache_creation_input_tokens, usage.cost_usd) == (7, 0.002)
    assert [t.text for t in replayed] == ["Writing it.", "Done."]


def test_a_dialog_puts_each_user_message_before_its_exchange() -> None:
    """Three turns over two exchanges: the second user message goes after the two turns of the first."""
    turns = [
        turn(1, None, ("Bash", {"command": "ls"}, "a"), input_tokens=5, output_tokens=1),
        turn(2, "first done", input_tokens=5, output_tokens=1),
        turn(3, "second done", input_tokens=7, output_tokens=2),
    ]
    dialog = [
        DialogMessage(turn=1, role="user", text="do one"),
        DialogMessage(turn=1, role="agent", text="first done", tokens=12),
        DialogMessage(turn=2, role="user", text="now two"),
        DialogMessage(turn=2, role="agent", text="second done", tokens=9),
    ]
    result = result_of(turns, dialog)
    entries = conversation(result)
    assert [e.text if isinstance(e, UserMessage) else e.index for e in entries] == ["do one", 1, 2, "now two", 3]
    written = json.loads(atif_json(to_atif(result, "ignored: the dialog opens it")))
    assert [(s["source"], s["message"]) for s in written["steps"]] == [
        ("user", "do one"),
        ("agent", ""),
        ("agent", "first done"),
        ("user", "now two"),
        ("agent", "second done"),
    ]
    assert [t.user for t in replay_trajectory(written, "x.json", lambda loc: 1).turns] == [None, None, "now two", None]
