"""A replay of what an agent really did: absolute paths inside the working folder the agent saw (``/sandbox``, as
Claude Code writes them), and Claude Code's one cost per exchange, reported on the exchange's last turn.

An export records the working folder on each agent step (``extra.cwd``, as Harbor's producers do) and each turn's
cost source (``metrics.extra.cost_source``); the replay puts ``/sandbox/...`` in its own sandbox, in the ATIF and
the YAML forms alike (the folder its commands see as theirs), and keeps the costs as the run recorded them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coder_eval_dagster.core.atif import atif_json, replay_trajectory, to_atif
from coder_eval_dagster.core.models.results import EvaluationResult, TokenUsage, ToolCallRecord, TurnRecord

from ..support.helpers import criterion, evaluate_replay, evaluate_task, replay_task, write


def test_yaml_absolute_paths_inside_the_sandbox_are_the_sandbox_files(tmp_path: Path) -> None:
    """What a replayed `pwd` prints is where the file tools work too; a path outside it is still refused."""
    calls: list[dict[str, Any]] = [
        {"tool": "Bash", "command": "pwd"},
        {"tool": "Write", "path": "/sandbox/abs.txt", "content": "one\n"},
        {"tool": "Edit", "path": "/sandbox/abs.txt", "old": "one", "new": "two"},
        {"tool": "Read", "path": "/sandbox/./abs.txt"},
        {"tool": "Write", "path": "/sandbox/deep/er.txt", "content": "x"},
        {"tool": "Write", "path": "/sandbox/../outside.txt", "content": "x"},
        {"tool": "Write", "path": "/sandboxes/a.txt", "content": "x"},
        {"tool": "Read", "path": "/sandbox/missing.txt"},
    ]
    result = evaluate_replay(
        tmp_path,
        [{"calls": calls}],
        success_criteria=[criterion("file_contains", path="abs.txt", includes=["two"])],
    )
    assert result.final_status == "SUCCESS", (result.error, [c.output for c in result.trajectory[0].calls])
    pwd, write_, edit, read, deep, up, beside, missing = result.trajectory[0].calls
    assert pwd.output is not None and pwd.output.strip() == "/sandbox"
    assert [c.status for c in (write_, edit, read, deep)] == ["success"] * 4, [c.output for c in (edit, read, deep)]
    assert read.output == "two\n" and write_.parameters["path"] == "/sandbox/abs.txt"  # recorded as given
    sandbox = tmp_path / "run" / "default" / "t" / "01" / "sandbox"
    assert (sandbox / "deep" / "er.txt").read_text() == "x"
    assert (up.status, up.output) == ("error", "path '/sandbox/../outside.txt' leaves the sandbox")
    assert (beside.status, beside.output) == ("error", "path '/sandboxes/a.txt' leaves the sandbox")
    assert missing.status == "error" and missing.output is not None and "'/sandbox/missing.txt'" in missing.output
    assert not (sandbox.parent / "outside.txt").exists() and not Path("/sandboxes").exists()


def claude_code_run(turns: list[TurnRecord], model: str = "claude-test") -> EvaluationResult:
    return EvaluationResult(
        run_id="r", task_id="t", base_task_id="t", variant_id="default", replicate=1, agent_type="claude-code",
        model=model, trajectory=turns, final_status="SUCCESS", success=True,
    )  # fmt: skip


def call(turn: int, tool: str, **parameters: Any) -> ToolCallRecord:
    return ToolCallRecord(turn=turn, seq=1, tool=tool, parameters=parameters, status="success")


def session(app: str = "/sandbox/app.py") -> list[TurnRecord]:
    """Claude Code's turns as its agent records them: absolute paths in /sandbox, the exchange's cost on its last
    turn and every turn of it ``reported``."""
    reported: dict[str, Any] = {"cost_source": "reported", "output_tokens": 20}
    return [
        TurnRecord(index=1, calls=[call(1, "Write", file_path=app, content="helo\n")],
                   input_tokens=300, cache_read_input_tokens=1000, cache_creation_input_tokens=50, **reported),
        TurnRecord(index=2, calls=[call(2, "Read", file_path=app)], input_tokens=400, **reported),
        TurnRecord(index=3, calls=[call(3, "Edit", file_path=app, old_string="helo", new_string="hello")],
                   input_tokens=500, **reported),
        TurnRecord(index=4, text="Fixed.", input_tokens=600, cost_usd=0.0111, **reported),
    ]  # fmt: skip


def test_an_export_records_the_working_folder_and_its_paths_replay_inside_the_sandbox() -> None:
    written = json.loads(atif_json(to_atif(claude_code_run(session()), "Fix app.py")))
    agent_steps = [step for step in written["steps"] if step["source"] == "agent"]
    assert [step["extra"]["cwd"] for step in agent_steps] == ["/sandbox"] * 4
    assert written["agent"]["extra"] == {"cwds": ["/sandbox"]}
    assert agent_steps[0]["tool_calls"][0]["arguments"]["file_path"] == "/sandbox/app.py"  # as the agent wrote it
    replayed = replay_trajectory(written, "x.json", lambda loc: 1).turns
    assert [call.parameters.get("path") for turn in replayed for call in turn.calls] == ["app.py"] * 3


def test_an_export_of_claude_code_replays_with_its_reported_cost_on_every_turn(tmp_path: Path) -> None:
    """Each turn keeps the original's cost and source: no turn priced at the run's prices or left unknown."""
    original = session("app.py")
    write(tmp_path / "session.json", atif_json(to_atif(claude_code_run(original), "Fix app.py")))
    task = replay_task(
        agent={"type": "replay", "trajectory": "session.json", "model": "claude-test"},
        success_criteria=[criterion("file_contains", path="app.py", includes=["hello"])],
    )
    result = evaluate_task(tmp_path, task)
    assert result.final_status == "SUCCESS", result.error
    assert [c.status for turn in result.trajectory for c in turn.calls] == ["success"] * 3

    def usage(turns: list[TurnRecord]) -> list[tuple[Any, ...]]:
        return [(t.input_tokens, t.cache_read_input_tokens, t.cost_usd, t.cost_source) for t in turns]

    assert usage(result.trajectory) == usage(original)
    total = result.total_token_usage
    assert total is not None and total == TokenUsage.of_turns(original)
    assert (total.total_cost_usd, total.cost_source, result.cost_complete) == (0.0111, "reported", True)


def test_turns_cut_off_before_the_turn_that_reported_their_cost_are_priced(tmp_path: Path) -> None:
    """As a live Claude Code run cut off before its result: the turns played are priced at the run's prices."""
    write(tmp_path / "session.json", atif_json(to_atif(claude_code_run(session()), "Fix app.py")))
    task = replay_task(
        agent={"type": "replay", "trajectory": "session.json", "model": "claude-sonnet-4-5"},
        run_limits={"max_turns": 2},
        success_criteria=[criterion("file_contains", path="app.py", includes=["helo"])],
    )
    result = evaluate_task(tmp_path, task)
    assert len(result.trajectory) == 2
    assert [t.cost_source for t in result.trajectory] == ["priced", "priced"]
    assert all(t.cost_usd is not None and t.cost_usd > 0 for t in result.trajectory)
    assert result.total_token_usage is not None and result.total_token_usage.cost_source == "priced"


def test_a_priced_turn_keeps_its_figure_and_source_and_an_unknown_one_is_priced_again(tmp_path: Path) -> None:
    turns = [
        TurnRecord(index=1, input_tokens=10, cost_usd=0.5, cost_source="priced"),
        TurnRecord(index=2, input_tokens=10, cost_source="unknown", text="done"),
    ]
    document = to_atif(claude_code_run(turns))
    written = json.loads(atif_json(document))
    assert [step["metrics"]["extra"]["cost_source"] for step in written["steps"]] == ["priced", "unknown"]
    played = replay_trajectory(written, "session.json", lambda _: 1).turns
    assert [turn.usage.cost_source for turn in played if turn.usage] == ["priced", None]
    write(tmp_path / "session.json", atif_json(document))
    task = replay_task(
        agent={"type": "replay", "trajectory": "session.json", "model": "claude-sonnet-4-5"},
        success_criteria=[criterion("file_exists", path="nothing.txt")],
    )
    first, second = evaluate_task(tmp_path, task).trajectory
    assert (first.cost_usd, first.cost_source) == (0.5, "priced")  # the run's figure, not the replay's prices
    assert second.cost_source == "priced" and second.cost_usd is not None and second.cost_usd < 0.001
