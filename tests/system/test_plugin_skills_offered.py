"""A coder_eval skill A/B through the installed CLI: the plugin variant's agent can call its skills even when the
task's `allowed_tools` (written for coder_eval, whose agent was offered every tool) lists no `Skill`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..support.fake_anthropic import Script, Turn
from ..support.helpers import criterion, write
from .conftest import SystemCli, anthropic_environment, claude_code_task, new_key

pytestmark = pytest.mark.slow


def test_an_agent_with_plugins_is_offered_skill(tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any) -> None:
    plugin = tmp_path / "plug"
    write(plugin / ".claude-plugin/plugin.json", json.dumps({"name": "demo-plugin", "version": "1.0.0"}))
    write(plugin / "skills/demo-skill/SKILL.md", "---\nname: demo-skill\ndescription: Greet the demo way.\n---\n")
    turns = [
        Turn(tools=[("Skill", {"skill": "demo-plugin:demo-skill"})]),
        Turn(tools=[("Bash", {"command": "echo hi > out.txt"})]),
        Turn(text="done"),
    ]
    fake = scripted_anthropic(Script(turns))
    agent = {
        "type": "claude-code",
        "model": "claude-test",
        "permission_mode": "bypassPermissions",
        "allowed_tools": ["Bash", "Write"],
        "plugins": [{"type": "local", "path": str(plugin)}],
    }
    checks = [criterion("skill_triggered", skill_name="demo-skill", expected_skill="demo-skill")]
    task = claude_code_task(tmp_path / "tasks", "skills", agent=agent, success_criteria=checks)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code == 0, outcome.output
    offered = {tool["name"] for request in fake.script.requests for tool in request.get("tools", [])}
    assert {"Skill", "Bash", "Write"} <= offered and "Read" not in offered, offered
    result = run.result("skills")
    assert result["final_status"] == "SUCCESS", result["success_criteria_results"]
