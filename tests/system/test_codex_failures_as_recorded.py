"""A codex task's failures through the installed CLI, as the user reads them: an API that fails, a call cut by
turn_timeout."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..support.fake_openai import FakeResponses, ResponsesScript, Step
from ..support.helpers import write_task
from .conftest import SystemCli, new_key, proxied_through

pytestmark = pytest.mark.slow
pytest.importorskip("openai_codex", reason="the codex extra is not installed")


def codex_task(folder: Path, task_id: str, **fields: object) -> Path:
    data = {
        "task_id": task_id,
        "description": "a codex failure",
        "initial_prompt": "Create out.txt",
        "sandbox": {"python": None},
        "agent": {"type": "codex", "model": "gpt-5-codex"},
        "success_criteria": [{"type": "file_exists", "path": "out.txt", "description": "out.txt exists"}],
        **fields,
    }
    return write_task(folder, data, f"{task_id}.yaml")


Serve = Callable[[ResponsesScript], FakeResponses]


def codex_environment(url: str) -> dict[str, str]:
    return {"CODEX_API_KEY": new_key("sk-proj-"), "CODEX_BASE_URL": url, **proxied_through(url)}


def test_an_api_answering_500_is_an_api_error(tmp_path: Path, system_cli: SystemCli, scripted_responses: Serve) -> None:
    """Codex names a 500 by its kind alone ("internalServerError", no status): the run filed it agent_crash."""
    fake = scripted_responses(ResponsesScript([Step(text="Done")], status=500))
    task = codex_task(tmp_path / "tasks", "failing")
    outcome, run = system_cli.run(task, env=codex_environment(fake.url), timeout=600)

    result = run.result("failing")
    assert result["final_status"] == "ERROR", outcome.output
    assert "internalServerError" in result["error_message"], result["error_message"]
    assert result["error_details"] == {"error_category": "agent_api_error", "component": "agent"}
    assert run.summary["task_results"][0]["error_category"] == "agent_api_error"


def test_a_call_cut_by_turn_timeout_is_recorded_as_it_started(
    tmp_path: Path, system_cli: SystemCli, scripted_responses: Serve
) -> None:
    """The call still running at turn_timeout was lost: no command anywhere, though it had written out.txt."""
    import pyarrow.parquet as pq

    slow = "echo a > out.txt; sleep 40; touch late.txt"
    fake = scripted_responses(ResponsesScript([Step(commands=[slow]), Step(text="Done")]))
    task = codex_task(tmp_path / "tasks", "cut", run_limits={"turn_timeout": 10})
    outcome, run = system_cli.run(task, env=codex_environment(fake.url))

    result = run.result("cut")
    assert result["final_status"] == "TIMEOUT", (result["error_message"], outcome.output)
    assert (run.evaluation("cut") / "sandbox/out.txt").is_file()
    (call,) = [call for iteration in result["iterations"] for call in iteration["commands"]]
    assert slow in call["parameters"]["command"] and call["result_status"] == "error", call
    rows = pq.read_table(system_cli.runs / "tables" / "commands").to_pylist()
    assert [(row["tool"], row["status"]) for row in rows] == [("Bash", "error")], rows
    assert slow in rows[0]["command"]
