"""The keys coder_eval's report readers read in task.json and run.json, as 0.12.16 writes them, through the
installed CLI: an iteration's crash and the schema's other fields, each call's place in its iteration and its
error, the agentless and ERROR records, and a dataset row's ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..support.fake_anthropic import Script, Turn
from .conftest import SystemCli, anthropic_environment, claude_code_task, new_key, task_file

pytestmark = pytest.mark.slow
SCHEMA_ITERATION_KEYS = {
    "crashed",
    "crash_reason",
    "provider_errors",
    "provider_call_costs",
    "harness_startup_ms",
    "harness_teardown_ms",
    "tool_union_ms",
}
SCHEMA_CALL_KEYS = {
    "sequence_number",
    "error_message",
    "result_data",
    "result_tokens",
    "generation_completed_at",
    "execution_started_at",
    "execution_completed_at",
}


def test_an_agents_iteration_and_calls_carry_the_schemas_keys(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    turns = [
        Turn(tools=[("Bash", {"command": "echo hi > out.txt"})]),
        Turn(tools=[("Write", {"file_path": "notes.txt", "content": "n"})]),
        Turn(tools=[("Bash", {"command": "false"})]),
        Turn(text="Done"),
    ]
    fake = scripted_anthropic(Script(turns))
    task = claude_code_task(tmp_path / "tasks", "tools")
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    assert outcome.code == 0, outcome.output

    result = run.result("tools")
    (iteration,) = result["iterations"]
    assert iteration.keys() >= SCHEMA_ITERATION_KEYS
    assert (iteration["crashed"], iteration["crash_reason"], iteration["provider_errors"]) == (False, None, [])
    calls = iteration["commands"]
    assert all(call.keys() >= SCHEMA_CALL_KEYS for call in calls)
    assert [call["sequence_number"] for call in calls] == [0, 1, 2]  # in the iteration, from 0 (was 1, 1, 1)
    assert [call["error_message"] is None for call in calls] == [True, True, False]
    assert all(isinstance(call["result_tokens"], int) for call in calls)
    assert result["command_stats"]["most_common_sequence"] == "Bash → Write → Bash"  # was null: within a turn
    assert iteration["tool_union_ms"] > 0  # coder_eval's tool bucket, read as run.json's tool_ms
    (row,) = run.summary["task_results"]
    assert row["tool_ms"] == iteration["tool_union_ms"]


def test_an_agent_that_failed_is_a_crashed_iteration(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """coder_eval's dashboards count crashed iterations: ours said crashed: false on an agent the API failed."""
    fake = scripted_anthropic(Script([Turn(text="never")], status=529))
    outcome, run = system_cli.run(
        claude_code_task(tmp_path / "tasks", "failed"), env=anthropic_environment(fake.url, new_key())
    )
    assert outcome.code == 1, outcome.output
    result = run.result("failed")
    assert result["final_status"] == "ERROR", result["error_message"]
    (iteration,) = result["iterations"]
    assert iteration["crashed"] is True and iteration["crash_reason"] == result["error_message"]
    (row,) = run.summary["task_results"]
    assert [(i["crashed"], i["crash_reason"]) for i in row["iterations"]] == [(True, result["error_message"])]


def test_agentless_error_and_dataset_records_as_coder_eval_writes_them(tmp_path: Path, system_cli: SystemCli) -> None:
    tasks = tmp_path / "tasks"
    task_file(tasks, "none", agent={"type": "none"})
    task_file(tasks, "broken", agent={"type": "none"}, pre_run=[{"command": "exit 3"}])
    (tasks / "rows.jsonl").write_text('{"id": "r1"}\n')
    task_file(tasks, "ds", agent={"type": "none"}, dataset={"paths": ["rows.jsonl"]})
    outcome, run = system_cli.run(tasks, env={})
    assert outcome.code == 1, outcome.output

    none = run.result("none")
    assert none["environment_info"]["system_prompt_semantics"] == "unknown"  # was left out: read as an old run
    assert [iteration["num_turns"] for iteration in none["iterations"]] == [None]  # no agent: no turns counted
    broken = run.result("broken")
    assert (broken["final_status"], broken["total_assistant_turns"]) == ("ERROR", None)  # the agent never ran
    resolved = run.result("ds/r1")["task_config"]["resolved"]
    assert (resolved["task_id"], resolved["row_id"], resolved["suite_id"], resolved["dataset"]) == (
        "ds/r1",
        "r1",
        "ds",
        None,
    )
