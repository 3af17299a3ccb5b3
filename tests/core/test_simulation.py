"""Simulated-user dialogs replayed offline: termination precedence, results, trials, tables, reports, judges."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from coder_eval_dagster.core.credentials import Credentials
from coder_eval_dagster.core.evaluation import evaluate, new_evaluation
from coder_eval_dagster.core.models.results import DialogMessage, EvaluationResult, TokenUsage
from coder_eval_dagster.core.models.simulation import Simulation
from coder_eval_dagster.core.resolution import resolve
from coder_eval_dagster.core.routing import BEDROCK_ANTHROPIC_VERSION, ApiRoute
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.run_spec import RunSpec
from coder_eval_dagster.core.scoring import TurnCheck
from coder_eval_dagster.core.simulation import (
    OPENING_REQUEST,
    Dialog,
    ModelUser,
    Utterance,
    simulator_messages,
    system_prompt,
)

from ..support.fake_anthropic import Script
from ..support.helpers import criterion, evaluate_replay, replay_task, run_cli, run_folders, write, write_task

ROOT = Path(__file__).parent.parent.parent
REFERENCE = "REFERENCE-SOLUTION-91c2"


def write_turn(path: str, content: str, text: str, tokens: int = 0) -> dict[str, Any]:
    turn: dict[str, Any] = {"calls": [{"tool": "Write", "path": path, "content": content}], "text": text}
    if tokens:
        turn["usage"] = {"input_tokens": tokens, "output_tokens": tokens}
    return turn


# a.txt after the first exchange, b.txt after the second, c.txt after the third
THREE_EXCHANGES = [
    write_turn("a.txt", "1", "Wrote a.txt. What next?", 100),
    {"user": "Now b.txt please."},
    write_turn("b.txt", "2", "Wrote b.txt.", 100),
    {"user": "And c.txt."},
    write_turn("c.txt", "3", "Wrote c.txt.", 100),
]


def dialog_task(tmp_path: Path, turns: list[dict[str, Any]], criteria=None, **simulation: Any) -> EvaluationResult:
    return evaluate_replay(
        tmp_path,
        turns,
        simulation={"enabled": True, "persona": "a terse user", "goal": "three files", **simulation},
        success_criteria=criteria or [criterion("file_exists", path="a.txt")],
        reference={"code": REFERENCE},
    )


def spoken(result: EvaluationResult) -> list[tuple[int, str]]:
    return [(m.turn, m.role) for m in result.dialog]


def test_a_replayed_dialog_ends_when_the_recorded_user_has_no_more_to_say(tmp_path: Path) -> None:
    result = dialog_task(tmp_path, THREE_EXCHANGES)
    assert result.final_status == "SUCCESS", (result.error, result.criteria)
    info = result.simulation
    assert (info.turns, info.stop_reason, info.replicate_index, info.n_trials) == (3, "stop_token", 1, 1)
    assert spoken(result) == [(1, "user"), (1, "agent"), (2, "user"), (2, "agent"), (3, "user"), (3, "agent")]
    assert [m.text for m in result.dialog][:3] == ["p", "Wrote a.txt. What next?", "Now b.txt please."]
    assert result.dialog[1].tokens == 200 and result.turns == 3
    assert (result.simulator_input_tokens, result.simulator_output_tokens) == (0, 0)


def test_the_stop_token_in_a_user_message_ends_the_dialog_there(tmp_path: Path) -> None:
    turns = [THREE_EXCHANGES[0], {"user": "Thanks, that is all. <<<END>>>"}, *THREE_EXCHANGES[2:]]
    result = dialog_task(tmp_path, turns)
    assert (result.simulation.turns, result.simulation.stop_reason) == (1, "stop_token")
    assert result.dialog[-1].role == "user" and result.dialog[-1].text == "Thanks, that is all."
    assert not (tmp_path / "run/default/t/01/sandbox/b.txt").exists()


def test_max_turns_ends_before_the_user_is_asked_again(tmp_path: Path) -> None:
    result = dialog_task(tmp_path, THREE_EXCHANGES, max_turns=2)
    assert (result.simulation.turns, result.simulation.stop_reason) == (2, "max_turns")
    assert spoken(result)[-1] == (2, "agent") and result.final_status == "SUCCESS"
    assert not (tmp_path / "run/default/t/01/sandbox/c.txt").exists()


def test_criteria_pass_is_checked_after_each_exchange_and_wins_over_max_turns(tmp_path: Path) -> None:
    criteria = [criterion("file_exists", path="b.txt"), criterion("command_executed", command_pattern="x", weight=0)]
    result = dialog_task(
        tmp_path, THREE_EXCHANGES, criteria, max_turns=2, stop_on_criteria_pass=True, check_criteria="every_turn"
    )
    assert (result.simulation.turns, result.simulation.stop_reason) == (2, "criteria_passed")
    assert [m.criteria_passed for m in result.dialog if m.role == "agent"] == [False, True]
    # end_of_dialog: no per-turn check, the dialog runs to its end
    plain = dialog_task(tmp_path / "plain", THREE_EXCHANGES, criteria)
    assert plain.simulation.stop_reason == "stop_token" and plain.dialog[1].criteria_passed is None


def test_the_dialog_budget_ends_gracefully_and_the_task_is_scored(tmp_path: Path) -> None:
    result = dialog_task(tmp_path, THREE_EXCHANGES, max_total_tokens=400)
    assert (result.simulation.turns, result.simulation.stop_reason) == (2, "budget")
    assert result.final_status == "SUCCESS" and result.criteria[0].passed


def test_a_run_limits_breach_comes_first_and_keeps_its_status(tmp_path: Path) -> None:
    result = evaluate_replay(
        tmp_path,
        THREE_EXCHANGES,
        simulation={
            "enabled": True,
            "persona": "p",
            "goal": "g",
            "stop_on_criteria_pass": True,
            "check_criteria": "both",
        },
        success_criteria=[criterion("file_exists", path="c.txt")],
        run_limits={"max_output_tokens": 150},
    )
    assert result.final_status == "TOKEN_BUDGET_EXCEEDED"
    assert (result.simulation.turns, result.simulation.stop_reason) == (1, "run_limit_exceeded")
    assert spoken(result) == [(1, "user"), (1, "agent"), (2, "user"), (2, "agent")]  # the cut-short exchange too


def test_early_stop_inside_a_dialog_ends_it_as_run_limits(tmp_path: Path) -> None:
    guard = {**criterion("command_executed", command_pattern="forbidden", max_count=0, min_count=0), "stop_early": {}}
    turns = [
        write_turn("a.txt", "1", "ok"),
        {"user": "go on"},
        {"calls": [{"tool": "Bash", "command": "echo forbidden"}]},
        {"user": "more"},
        write_turn("c.txt", "3", "late"),
    ]
    result = dialog_task(tmp_path, turns, [guard])
    assert result.stopped_early and result.simulation.stop_reason == "run_limit_exceeded"
    assert not (tmp_path / "run/default/t/01/sandbox/c.txt").exists()


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        ([{"user": "first"}, {"user": "second"}, write_turn("a.txt", "1", "x")], "goes between agent turns"),
        ([write_turn("a.txt", "1", "x"), {"user": "u", "text": "t"}, {"text": "y"}], "stands alone"),
    ],
)
def test_user_messages_go_between_turns(tmp_path: Path, turns: list[dict[str, Any]], message: str) -> None:
    write(tmp_path / "traj.yaml", json.dumps({"turns": turns}))
    done = run_cli("validate", write_task(tmp_path, replay_task(success_criteria=[criterion("file_exists", path="a")])))
    assert done.code != 0 and message in done.err and "traj.yaml" in done.err and "Traceback" not in done.err


def test_without_simulation_a_replay_ends_at_the_first_user_message(tmp_path: Path) -> None:
    result = evaluate_replay(tmp_path, THREE_EXCHANGES, success_criteria=[criterion("file_exists", path="b.txt")])
    assert result.final_status == "FAILURE" and result.simulation is None and result.dialog == []


def test_simulator_prompt_holds_persona_goal_constraints_and_the_dialog_from_the_users_side() -> None:
    settings = Simulation(persona="Ann, impatient", goal="a CSV export", constraints=["never paste code"])
    system = system_prompt(settings)
    assert all(part in system for part in ("Ann, impatient", "a CSV export", "- never paste code", "<<<END>>>"))
    dialog = [
        DialogMessage(turn=1, role="user", text="export please"),
        DialogMessage(turn=1, role="agent", text="Which columns?"),
        DialogMessage(turn=2, role="user", text="all"),
        DialogMessage(turn=2, role="agent", text="Done."),
    ]
    messages = simulator_messages(dialog, opened=False)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert "export please" in messages[0]["content"] and "Which columns?" in messages[0]["content"]
    context = RunContext(ApiRoute("direct", secret="k"), Credentials())
    request = ModelUser(settings, "claude-x", context).request(dialog)
    assert set(request) == {"model", "max_tokens", "system", "messages"}  # no tools offered


def test_a_simulated_user_that_opens_the_dialog_is_asked_to_and_its_opening_is_its_own_message() -> None:
    settings = Simulation(persona="p", goal="g")
    user = ModelUser(settings, "claude-x", RunContext(ApiRoute("direct", secret="k"), Credentials()), opens=True)
    assert user.request([])["messages"] == [{"role": "user", "content": OPENING_REQUEST}]
    dialog = [DialogMessage(turn=1, role="user", text="hi"), DialogMessage(turn=1, role="agent", text="Colour?")]
    messages = user.request(dialog)["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", OPENING_REQUEST),
        ("assistant", "hi"),
        ("user", "Colour?"),
    ]


def test_a_replayed_dialog_without_a_prompt_is_opened_by_its_first_user_message(tmp_path: Path) -> None:
    result = evaluate_replay(
        tmp_path,
        [{"user": "Make a.txt please."}, *THREE_EXCHANGES],
        initial_prompt=None,
        simulation={"enabled": True, "persona": "p", "goal": "g"},
        success_criteria=[criterion("file_exists", path="c.txt")],
    )
    assert result.final_status == "SUCCESS", (result.error, result.criteria)
    users = [m.text for m in result.dialog if m.role == "user"]
    assert users == ["Make a.txt please.", "Now b.txt please.", "And c.txt."]
    assert (result.simulation.turns, result.prompt) == (3, "Make a.txt please.")


def test_the_simulated_user_takes_the_runs_route(api, monkeypatch) -> None:
    fake = api(Script([], user_replies=["Make it blue."]))
    dialog = [DialogMessage(turn=1, role="user", text="hi"), DialogMessage(turn=1, role="agent", text="Colour?")]
    settings = Simulation(persona="p", goal="g")
    direct = ModelUser(settings, "anthropic.claude-sonnet-4-6", RunContext.create()).next_message(dialog)
    assert (direct.text, direct.usage.input_tokens, direct.usage.output_tokens) == ("Make it blue.", 50, 10)
    # priced as the direct API bills claude-sonnet-4-6: 50 x $3 + 10 x $15 per million
    assert (direct.usage.total_cost_usd, direct.usage.cost_source) == (pytest.approx(0.0003), "priced")
    monkeypatch.setenv("API_BACKEND", "bedrock")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-token-0123456789")
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake.url)
    ModelUser(settings, "claude-sonnet-4-6", RunContext.create()).next_message(dialog)
    assert fake.script.paths == ["/v1/messages", "/model/us.anthropic.claude-sonnet-4-6/invoke"]
    assert fake.script.requests[0]["model"] == "claude-sonnet-4-6"
    assert fake.script.requests[1]["anthropic_version"] == BEDROCK_ANTHROPIC_VERSION
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK")
    with pytest.raises(RuntimeError, match="AWS_BEARER_TOKEN_BEDROCK is not set"):
        ModelUser(settings, "m", RunContext.create()).next_message(dialog)


def test_trials_results_tables_and_report(tmp_path: Path) -> None:
    write(tmp_path / "tasks/dialog/traj.yaml", json.dumps({"turns": THREE_EXCHANGES}))
    task = replay_task(
        task_id="dialog",
        initial_prompt="Make a.txt <b>",
        simulation={"enabled": True, "persona": "p", "goal": "g", "n_trials": 3},
        success_criteria=[criterion("file_exists", path="a.txt")],
    )
    write_task(tmp_path / "tasks/dialog", task)
    write(
        tmp_path / "exp.yaml",
        "experiment_id: e\nrepeats: 2\nvariants:\n  - variant_id: v\n    simulation: {max_turns: 2}\n",
    )
    done = run_cli("run", tmp_path / "tasks", "-e", tmp_path / "exp.yaml", "--runs-dir", tmp_path / "runs")
    assert done.code == 0, done.err
    (run_dir,) = run_folders(tmp_path / "runs")
    trials = sorted(p.name for p in (run_dir / "v/dialog").iterdir())
    assert trials == ["00", "01", "02"]  # n_trials, not the experiment's repeats
    third = json.loads((run_dir / "v/dialog/02/task.json").read_text())
    # ours beside the schema's: the simulated user's four token counts and their cost (it spent none here)
    ours = third["simulator_token_usage"]  # beside the block: coder_eval's model forbids any other key in it
    assert (ours["input_tokens"], ours["output_tokens"], ours["total_cost_usd"]) == (0, 0, None), ours
    assert third["criteria_check_token_usage"] is None  # ours too: no per-turn check here
    assert third["simulation"] == {  # coder_eval's SimulationTelemetry, field for field
        "n_trials": 3,
        "replicate_index": 2,
        "stop_reason": "max_turns",  # the variant's partial block reached the loop
        "simulator_input_tokens": 0,
        "simulator_output_tokens": 0,
        "simulator_failures": 0,
        "total_turns": 2,
        "simulator_model": None,
    }
    entry = json.loads((run_dir / "run.json").read_text())["task_results"][0]
    assert entry["simulation"]["stop_reason"] == "max_turns" and entry["simulation"]["simulator_input_tokens"] == 0
    html = (run_dir / "v/dialog/00/task.html").read_text()
    assert "<h2>Dialog</h2>" in html and "Make a.txt &lt;b&gt;" in html and "ended by max_turns" in html
    assert "simulated user · turn 2" in html
    (table,) = (tmp_path / "runs/tables/dialog_turns").glob("*/*.parquet")
    rows = pq.read_table(table).to_pylist()
    assert len(rows) == 3 * 4
    first = [r for r in rows if r["replicate"] == 0]
    assert [(r["turn"], r["role"]) for r in first] == [(1, "user"), (1, "agent"), (2, "user"), (2, "agent")]
    assert first[1]["tokens"] == 200 and first[0]["text"] == "Make a.txt <b>" and first[0]["task_id"] == "dialog"
    (results,) = (tmp_path / "runs/tables/task_results").glob("*/*.parquet")
    assert pq.read_table(results).column("simulator_output_tokens").to_pylist() == [0, 0, 0]
    assert run_cli("rescore", run_dir).code == 0  # the stored dialog is scored again, its rows replaced
    assert pq.read_table(table).num_rows == 12
    assert json.loads((run_dir / "v/dialog/02/task.json").read_text())["dialog"] == third["dialog"]


def test_the_judge_sees_the_replayed_dialog_with_the_guard(tmp_path: Path, api) -> None:
    fake = api(Script([], verdict={"score": 1.0, "rationale": "ok"}))
    judge = criterion("llm_judge", prompt="Did the agent make the files?", include_dialog=True)
    result = dialog_task(tmp_path, THREE_EXCHANGES, [judge])
    assert result.final_status == "SUCCESS", result.criteria
    (request,) = fake.script.requests
    prompt = request["messages"][0]["content"]
    assert "UNTRUSTED DATA" in prompt and ": dialog. It comes from" in prompt and "may invent premises" in prompt
    assert prompt.index("[user] Now b.txt please.") < prompt.index("[agent] Wrote b.txt.")
    assert "[agent] Wrote c.txt." in prompt and REFERENCE not in prompt


def test_shipped_offline_dialog_example(tmp_path: Path) -> None:
    (row_task,) = resolve(RunSpec(task_paths=[str(ROOT / "tasks/replay_dialog/task.yaml")])).row_tasks
    result = evaluate(new_evaluation("r", tmp_path, row_task, 1, None))
    assert result.final_status == "SUCCESS", result.criteria
    assert (result.simulation.turns, result.simulation.stop_reason) == (2, "criteria_passed")
    assert [m.criteria_passed for m in result.dialog if m.role == "agent"] == [False, True]
    assert run_cli("validate", ROOT / "examples/dialog/claude_code_dialog.yaml").code == 0


@pytest.mark.parametrize(
    "reason", ["stop_token", "criteria_passed", "max_turns", "budget", "error", "run_limit_exceeded", "agent_max_turns"]
)
def test_every_stop_reason_is_documented(reason: str) -> None:
    assert f"`{reason}`" in (ROOT / "docs/task-format.md").read_text()


def tool_calls_block(prompt: str) -> str:
    return prompt[prompt.index("## Tool calls (latest turn)") : prompt.index(": tool calls>>")]


def test_a_judges_tool_calls_are_the_latest_exchanges_as_its_agent_output_is(tmp_path: Path, api) -> None:
    fake = api(Script([], verdict={"score": 1.0, "rationale": "ok"}))
    judge = criterion("llm_judge", prompt="Grade.", include_agent_output=True, include_tool_calls=True)
    result = dialog_task(tmp_path, THREE_EXCHANGES, [judge])
    assert result.final_status == "SUCCESS", result.criteria
    assert [m.exchange_start for m in result.dialog if m.role == "agent"] == [0, 1, 2]
    (request,) = fake.script.requests
    calls = tool_calls_block(request["messages"][0]["content"])
    assert "c.txt" in calls and "a.txt" not in calls and "b.txt" not in calls


def test_the_per_turn_check_runs_the_trajectory_criteria_and_the_judges_and_counts_their_spend(
    tmp_path: Path, api
) -> None:
    """As coder_eval's: every gating criterion after each exchange, on the dialog so far; a failing one ends the
    check before the judge is called."""
    fake = api(Script([], verdict={"score": 1.0, "rationale": "ok"}))
    criteria = [
        criterion("llm_judge", prompt="Grade.", include_tool_calls=True),
        criterion("command_executed", tool_name="Write", min_count=2),
    ]
    result = dialog_task(tmp_path, THREE_EXCHANGES, criteria, stop_on_criteria_pass=True, check_criteria="every_turn")
    assert (result.simulation.turns, result.simulation.stop_reason) == (2, "criteria_passed")
    assert [m.criteria_passed for m in result.dialog if m.role == "agent"] == [False, True]
    assert result.final_status == "SUCCESS", result.criteria
    per_turn, final = fake.script.requests  # exchange 1 failed on command_executed: no judge call
    assert "b.txt" in tool_calls_block(per_turn["messages"][0]["content"])
    assert "a.txt" not in tool_calls_block(final["messages"][0]["content"])
    check = result.criteria_check_token_usage
    assert check is not None and result.judge_token_usage == TokenUsage.summed([result.criteria[0].token_usage, check])


def test_a_gating_criterion_not_checkable_per_turn_keeps_the_dialog_from_ending_on_all_pass(tmp_path: Path) -> None:
    """A criterion reading the task's folder (staged once the agent is done) leaves every per-turn all-pass unknown."""
    criteria = [criterion("file_exists", path="a.txt"), criterion("run_command", command="test -d $TASK_DIR")]
    result = dialog_task(tmp_path, THREE_EXCHANGES, criteria, stop_on_criteria_pass=True, check_criteria="both")
    assert (result.simulation.turns, result.simulation.stop_reason) == (3, "stop_token")
    assert [m.criteria_passed for m in result.dialog if m.role == "agent"] == [None, None, None]
    assert result.final_status == "SUCCESS", result.criteria
    failing = dialog_task(
        tmp_path / "failing",
        THREE_EXCHANGES,
        [criterion("file_exists", path="b.txt"), criteria[1]],
        check_criteria="every_turn",
    )
    assert [m.criteria_passed for m in failing.dialog if m.role == "agent"] == [False, None, None]


def test_a_dialog_s_task_json_written_with_its_spend_inside_the_block_reads_as_before() -> None:
    """Earlier versions wrote the simulated user's and the per-turn judges' usage inside ``simulation``."""
    usage = {"uncached_input_tokens": 10, "output_tokens": 5, "total_cost_usd": 0.5}
    block = {"n_trials": 1, "replicate_index": 0, "stop_reason": "max_turns", "total_turns": 1}
    data = {"run_id": "r", "task_id": "t", "base_task_id": "t", "variant_id": "default", "replicate": 0}
    earlier = {
        **data,
        "agent_type": "none",
        "simulation": {**block, "simulator_token_usage": usage, "criteria_check_token_usage": usage},
    }
    result = EvaluationResult.model_validate_json(json.dumps(earlier))
    assert result.simulator_token_usage == result.criteria_check_token_usage == TokenUsage.model_validate(usage)
    judges = result.judge_token_usage  # the per-turn checks count in the judges' spend
    assert judges is not None and (judges.uncached_input_tokens, judges.total_cost_usd) == (10, 0.5)
    assert "simulator_token_usage" not in json.loads(result.model_dump_json())["simulation"]


@dataclass
class CachingUser:
    """A simulated user whose every call read most of its prompt from the cache."""

    model: str | None = "claude-x"
    usage: TokenUsage = field(
        default_factory=lambda: TokenUsage(
            uncached_input_tokens=5, cache_creation_input_tokens=20, cache_read_input_tokens=300, output_tokens=7
        )
    )

    def next_message(self, dialog: list[DialogMessage]) -> Utterance:
        return Utterance("Make it blue.", self.usage)


def test_a_message_records_its_input_with_the_cached_prompt_and_its_output_as_the_dialog_budget_counts_them(
    tmp_path: Path,
) -> None:
    """``tokens`` was one number: the simulator's input and output could not be told apart."""
    dialog = Dialog(Simulation(persona="p", goal="g"), CachingUser(), None, lambda turns, messages: TurnCheck(None, []))
    dialog.open()
    (said,) = dialog.messages
    assert (said.input_tokens, said.output_tokens, said.tokens) == (325, 7, 332)
    assert said.tokens == dialog.simulator_tokens  # what max_total_tokens counts of the call
    replies = [m for m in dialog_task(tmp_path, THREE_EXCHANGES).dialog if m.role == "agent"]
    assert [(m.input_tokens, m.output_tokens, m.tokens) for m in replies] == [(100, 100, 200)] * 3


def test_a_dialog_message_written_before_its_token_split_keeps_its_tokens() -> None:
    earlier = DialogMessage.model_validate({"turn": 1, "role": "agent", "text": "Done.", "tokens": 12})
    assert (earlier.tokens, earlier.input_tokens, earlier.output_tokens) == (12, 0, 0)
