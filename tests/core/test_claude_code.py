"""The claude-code agent for real: claude-agent-sdk and its bundled CLI against a scripted server on 127.0.0.1."""

from __future__ import annotations

import json

from coder_eval_dagster.core.limits import LATE_COST_WARNING

from ..support.fake_anthropic import API_KEY, Script, Turn
from ..support.helpers import criterion, evaluate_claude_code, write

CLAUDE = {"type": "claude-code", "permission_mode": "bypassPermissions", "model": "claude-test"}


def test_tool_calls_usage_cost_and_isolation(tmp_path, api):
    fake = api(
        Script(
            [
                Turn(tools=[("Bash", {"command": "echo hi > out.txt"})], input_tokens=300, output_tokens=40),
                Turn(tools=[("Bash", {"command": "env > seen_env.txt; exit 3"})], input_tokens=400, output_tokens=30),
                Turn(text="Done: created out.txt", input_tokens=500, output_tokens=10),
            ]
        )
    )
    result = evaluate_claude_code(tmp_path, run_limits={"max_turns": 10, "expected_turns": 3})
    assert result.final_status == "SUCCESS", (result.error, result.criteria)
    calls = [c for t in result.trajectory for c in t.calls]
    assert [(c.tool, c.parameters["command"]) for c in calls] == [
        ("Bash", "echo hi > out.txt"),
        ("Bash", "env > seen_env.txt; exit 3"),
    ]
    assert [c.status for c in calls] == ["success", "error"] and all(c.duration_ms > 0 for c in calls)
    assert (result.turns, result.visible_turns) == (3, 3) and result.within_expected_turns is True
    usage = result.total_token_usage
    assert (usage.uncached_input_tokens, usage.output_tokens) == (1200, 80)
    assert result.agent_cost_usd is not None and result.agent_cost_usd > 0
    assert result.command_stats.commands_by_tool == {"Bash": 2}
    seen = (tmp_path / "run/default/t/01/sandbox/seen_env.txt").read_text()
    assert "caller-secret-value-42" not in seen and "MY_SERVICE_TOKEN" not in seen
    assert "HOME=/tmp/coder-eval-claude-" in seen and "IS_SANDBOX=1" in seen
    assert API_KEY not in result.model_dump_json()  # never in a persisted result
    # only the Messages API on loopback: no CONNECT through the proxy, no other path
    assert fake.script.paths and all(p.startswith("/v1/messages") for p in fake.script.paths), fake.script.paths
    request = fake.script.requests[-1]
    assert request["model"] == "claude-test" and any(t["name"] == "Bash" for t in request["tools"])


def test_token_budget_aborts_between_turns(tmp_path, api):
    fake = api(
        Script([Turn(tools=[("Bash", {"command": f"echo {i} >> log.txt"})], output_tokens=40) for i in range(4)])
    )
    result = evaluate_claude_code(tmp_path, run_limits={"max_output_tokens": 60, "max_turns": 10})
    assert result.final_status == "TOKEN_BUDGET_EXCEEDED" and not result.success
    log = (tmp_path / "run/default/t/01/sandbox/log.txt").read_text().split()
    assert log == ["0", "1"] and len([r for r in fake.script.requests if r.get("tools")]) <= 3


def test_early_stop_through_the_hook(tmp_path, api):
    fake = api(
        Script(
            [
                Turn(tools=[("Bash", {"command": "echo a > out.txt"})]),
                Turn(tools=[("Bash", {"command": "git push --force"})]),
                Turn(tools=[("Bash", {"command": "touch late.txt"})]),
            ]
        )
    )
    guard = {**criterion("command_executed", command_pattern="git push", min_count=0, max_count=0), "stop_early": {}}
    result = evaluate_claude_code(
        tmp_path, [guard, criterion("file_exists", path="late.txt")], run_limits={"max_turns": 10}
    )
    assert result.stopped_early and result.early_stop_reason == "criterion_failed"
    assert result.final_status == "FAILURE" and result.criteria[1].advisory
    assert not (tmp_path / "run/default/t/01/sandbox/late.txt").exists()
    # no tool after the stop ran; at most the model request already in flight when the stop was decided
    assert [c.parameters["command"] for t in result.trajectory for c in t.calls][-1] == "git push --force"
    assert len([r for r in fake.script.requests if r.get("tools")]) <= 3


def test_api_error_becomes_error_with_its_reason(tmp_path, api):
    api(Script([Turn(text="never")], status=500))
    result = evaluate_claude_code(tmp_path)
    assert result.final_status == "ERROR" and "API Error: 500 scripted failure" in result.error
    assert result.criteria == []


def test_missing_api_key_is_an_error_not_a_crash(tmp_path, api, monkeypatch):
    api(Script([]))
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    result = evaluate_claude_code(tmp_path)
    assert result.final_status == "ERROR" and "ANTHROPIC_API_KEY" in result.error


def test_cost_budget_is_checked_when_the_cost_arrives(tmp_path, api):
    api(Script([Turn(tools=[("Bash", {"command": "echo hi > out.txt"})]), Turn(text="done")]))
    over = evaluate_claude_code(tmp_path / "a", run_limits={"max_usd": 0.0001})
    assert over.final_status == "COST_BUDGET_EXCEEDED" and over.agent_cost_usd > 0.0001
    under = evaluate_claude_code(tmp_path / "b", run_limits={"max_usd": 5.0})
    assert under.final_status == "SUCCESS"  # claude-test has no price: its cost came with the last turn only
    assert under.warnings == [LATE_COST_WARNING]


def _sent(fake) -> str:
    """Everything the agent sent the model (system prompt, tools, messages), as one text."""
    return json.dumps(fake.script.requests)


def test_system_prompt_is_claude_codes_with_the_tasks_appended(tmp_path, api):
    fake = api(Script([Turn(tools=[("Bash", {"command": "echo hi > out.txt"})]), Turn(text="done")]))
    agent = {**CLAUDE, "system_prompt": "APPENDED-MARKER: answer tersely."}
    assert evaluate_claude_code(tmp_path / "a", agent=agent).final_status == "SUCCESS"
    system = json.dumps(fake.script.requests[0]["system"])
    assert "You are Claude Code" in system and "APPENDED-MARKER" in system
    fake.script.requests.clear()
    replaced = {**agent, "system_prompt_mode": "replace"}
    evaluate_claude_code(tmp_path / "b", agent=replaced)
    system = json.dumps(fake.script.requests[0]["system"])
    assert "APPENDED-MARKER" in system and "You are an agent working with the user" not in system


def test_plugins_offer_their_skills_and_only_a_successful_skill_call_counts(tmp_path, api):
    write(tmp_path / "plug/.claude-plugin/plugin.json", json.dumps({"name": "demo-plugin", "version": "1.0.0"}))
    write(
        tmp_path / "plug/skills/demo-skill/SKILL.md", "---\nname: demo-skill\ndescription: Greet the demo way.\n---\n"
    )
    script = [
        Turn(tools=[("Skill", {"skill": "demo-plugin:demo-skill"})]),
        Turn(tools=[("Bash", {"command": "echo hi > out.txt"})]),
        Turn(text="done"),
    ]
    skill = criterion("skill_triggered", skill_name="demo-skill", expected_skill="demo-skill")
    fake = api(Script(script))
    plugins = [{"type": "local", "path": str(tmp_path / "plug")}]
    on = evaluate_claude_code(tmp_path / "on", [skill], agent={**CLAUDE, "plugins": plugins})
    assert "demo-skill" in _sent(fake) and on.final_status == "SUCCESS", on.criteria
    fake.script.requests.clear()
    off = evaluate_claude_code(tmp_path / "off", [skill], agent=CLAUDE)
    assert "Greet the demo way" not in _sent(fake)
    assert next(c.status for t in off.trajectory for c in t.calls) == "error"  # no such skill without the plugin
    assert off.criteria[0].observed_label == "no" and off.final_status == "FAILURE"


def test_setting_sources_load_the_projects_claude_md_unless_none_are_named(tmp_path, api):
    sandbox = {
        "python": None,
        "template_sources": [{"type": "starter_files", "files": [{"path": "CLAUDE.md", "content": "PROJECT-MARKER"}]}],
    }
    fake = api(Script([Turn(tools=[("Bash", {"command": "echo hi > out.txt"})]), Turn(text="done")]))
    evaluate_claude_code(tmp_path / "isolated", sandbox=sandbox, agent={**CLAUDE, "setting_sources": []})
    assert "PROJECT-MARKER" not in _sent(fake)
    fake.script.requests.clear()
    evaluate_claude_code(tmp_path / "project", sandbox=sandbox)  # coder_eval's default: [project]
    assert "PROJECT-MARKER" in _sent(fake)


def test_the_tool_call_cap_refuses_the_next_call_and_ends_the_run(tmp_path, api):
    api(Script([Turn(tools=[("Bash", {"command": f"echo {i} >> out.txt"})]) for i in range(4)]))
    result = evaluate_claude_code(tmp_path, run_limits={"max_tool_calls": 2, "max_turns": 10})
    assert (tmp_path / "run/default/t/01/sandbox/out.txt").read_text().split() == ["0", "1"]
    assert result.warnings == ["run_limits.max_tool_calls (2) reached: the agent was stopped there"]
    assert result.final_status == "SUCCESS"  # graded on what it left: out.txt is there


def test_a_plugin_folder_missing_at_the_start_is_the_evaluations_error(tmp_path, api):
    fake = api(Script([Turn(text="never")]))
    result = evaluate_claude_code(tmp_path, agent={**CLAUDE, "plugins": [{"path": str(tmp_path / "gone")}]})
    assert result.final_status == "ERROR" and f"plugin folder not found: {tmp_path / 'gone'}" in result.error
    assert fake.script.requests == []


def test_a_settings_file_of_the_task_reaches_the_confined_cli(tmp_path, api):
    """``claude_settings: FILE`` reaches the confined CLI (its text, not its path: the task's folder is not in its view)."""
    write(tmp_path / "settings.json", json.dumps({"env": {"FROM_SETTINGS": "applied"}}))
    api(Script([Turn(tools=[("Bash", {"command": "echo $FROM_SETTINGS > out.txt"})]), Turn(text="done")]))
    result = evaluate_claude_code(
        tmp_path,
        [criterion("file_contains", path="out.txt", includes=["applied"])],
        agent={**CLAUDE, "claude_settings": "settings.json"},
    )
    assert result.final_status == "SUCCESS", (result.error, result.criteria)


def test_the_clis_own_requests_go_through_the_egress_proxy_and_are_refused_there(tmp_path, api):
    """The CLI honours the sandbox's proxy variables: its WebFetch (a request of its own, not a tool's process)
    reaches the egress proxy, which refuses it (nothing is allowed) and says so; its model calls reach the model
    proxy only."""
    fake = api(
        Script([Turn(tools=[("WebFetch", {"url": "https://example.com/", "prompt": "what is it"})]), Turn(text="done")])
    )
    agent = {**CLAUDE, "allowed_tools": ["WebFetch"]}  # (not among the default tools)
    result = evaluate_claude_code(tmp_path, [criterion("file_exists", path=".")], agent=agent)
    assert result.final_status == "SUCCESS", (result.error, result.criteria)
    assert [(c.tool, c.status) for t in result.trajectory for c in t.calls] == [("WebFetch", "error")]
    assert result.refused_connections and {r.phase for r in result.refused_connections} == {"agent"}
    assert all(p.startswith("/v1/messages") for p in fake.script.paths), fake.script.paths
