"""A claude-code task under the docker driver through the installed CLI: the agent runs in the container, whose
confined network (the default) has no way out but the harness's proxies, and reaches the scripted API on the
host's loopback through the model proxy."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.fake_anthropic import Script, Turn
from .conftest import (
    ENV_PROBE,
    SystemCli,
    agent_usage,
    anthropic_environment,
    carried,
    claude_code_task,
    new_key,
    no_key_anywhere,
    probe_ran,
)

pytestmark = pytest.mark.slow


def test_claude_code_in_a_container_succeeds_and_its_tools_never_see_the_key(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic, docker_image: str
) -> None:
    key = new_key()
    fake = scripted_anthropic(
        Script(
            [
                Turn(tools=[("Bash", {"command": "test -f /.dockerenv && echo inside > out.txt"})]),
                Turn(tools=[("Bash", {"command": ENV_PROBE})]),
                Turn(text="Done: created out.txt"),
            ]
        )
    )
    sandbox = {"driver": "docker", "python": None, "image": docker_image}
    success = [{"type": "file_contains", "path": "out.txt", "includes": ["inside"], "description": "in the container"}]
    task = claude_code_task(tmp_path / "tasks", "docker", sandbox=sandbox, success_criteria=success)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, key))

    assert outcome.code == 0, outcome.output
    assert len(fake.script.agent_requests()) == 3, fake.script.paths
    assert fake.script.paths and all(path.startswith("/v1/messages") for path in fake.script.paths), fake.script.paths
    assert carried(key, fake.script.headers)
    result = run.result("docker")
    assert result["final_status"] == "SUCCESS", (result["error_message"], result["success_criteria_results"])
    tokens_in, tokens_out, cost = agent_usage(result)
    assert (tokens_in, tokens_out) == (300, 60) and cost > 0
    probe_ran(run.evaluation("docker") / "sandbox")
    no_key_anywhere(key, system_cli.runs, system_cli.home, output=outcome.output)
