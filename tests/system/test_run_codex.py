"""A codex task through the installed CLI, CODEX_API_KEY only in its environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.fake_openai import ResponsesScript, Step
from ..support.helpers import write_task
from .conftest import ENV_PROBE, SystemCli, agent_usage, carried, new_key, no_key_anywhere, probe_ran, proxied_through

pytestmark = pytest.mark.slow
pytest.importorskip("openai_codex", reason="the codex extra is not installed")


def test_a_codex_task_succeeds_with_usage_and_its_commands_never_see_the_key(
    tmp_path: Path, system_cli: SystemCli, scripted_responses
) -> None:
    key = new_key("sk-proj-")
    fake = scripted_responses(
        ResponsesScript(
            [
                Step(commands=["echo hi > out.txt"], input_tokens=200, cached_tokens=50, output_tokens=30),
                Step(commands=[ENV_PROBE], input_tokens=300, cached_tokens=100, output_tokens=20),
                Step(text="Done: created out.txt", input_tokens=400, cached_tokens=200, output_tokens=10),
            ]
        )
    )
    task = write_task(
        tmp_path / "tasks",
        {
            "task_id": "codex",
            "description": "the codex path",
            "initial_prompt": "Create out.txt",
            "sandbox": {"python": None},
            "agent": {"type": "codex", "model": "gpt-fake"},
            "success_criteria": [{"type": "file_exists", "path": "out.txt", "description": "out.txt exists"}],
        },
        "codex.yaml",
    )
    env = {"CODEX_API_KEY": key, "CODEX_BASE_URL": fake.url, **proxied_through(fake.url)}
    outcome, run = system_cli.run(task, env=env)

    assert outcome.code == 0, outcome.output
    assert fake.script.paths == ["/v1/responses"] * 3  # the three steps, nothing else (no CONNECT through the proxy)
    assert carried(key, fake.script.headers)  # the key itself reached the API (and, below, nothing else)
    result = run.result("codex")
    assert result["final_status"] == "SUCCESS", (result["error_message"], result["success_criteria_results"])
    # fresh prompt tokens are recorded as cache creation, cached ones as cache reads (docs/running.md): per turn
    prompt = [
        t["input_tokens"] + t["cache_creation_input_tokens"] + t["cache_read_input_tokens"]
        for t in result["iterations"][0]["turns"]
    ]
    _, tokens_out, cost = agent_usage(result)
    assert prompt == [200, 300, 400] and tokens_out == 60
    assert cost is None  # codex reports no price: no cost is made up
    probe_ran(run.evaluation("codex") / "sandbox")
    no_key_anywhere(key, system_cli.runs, system_cli.home, output=outcome.output)
