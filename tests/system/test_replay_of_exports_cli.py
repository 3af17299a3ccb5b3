"""A real Claude Code run, exported to ATIF and replayed, through the installed `coder-eval`: the same criteria
results, calls, tokens and cost as the run it came from.

Claude Code writes absolute paths under its working folder as it sees it (``/sandbox/app.py``) and reports its
cost once per exchange, on the exchange's last turn: the replay puts those paths in its own sandbox, and its
earlier turns keep the cost Claude Code reported for them on that last turn (no turn priced again, none unknown).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from coder_eval_dagster.core.layout import load_result

from ..support.fake_anthropic import Script, Turn
from ..support.helpers import write_task
from .conftest import RunFolder, SystemCli, anthropic_environment, claude_code_task, new_key, only_run

pytestmark = pytest.mark.slow

CRITERIA = [
    {"type": "file_contains", "path": "app.py", "includes": ["hello"], "description": "the typo is fixed"},
    {"type": "file_contains", "path": "out.txt", "includes": ["hello"], "description": "out.txt copies it"},
    {"type": "command_executed", "tool_name": "Edit", "require_success": True, "description": "the edit worked"},
    {"type": "command_executed", "tool_name": "Read", "require_success": True, "description": "the read worked"},
]
SESSION = Script(
    [
        Turn(tools=[("Write", {"file_path": "/sandbox/app.py", "content": "print('helo')\n"})], input_tokens=300),
        Turn(tools=[("Read", {"file_path": "/sandbox/app.py"})], input_tokens=400, output_tokens=30),
        Turn(tools=[("Edit", {"file_path": "/sandbox/app.py", "old_string": "helo", "new_string": "hello"})]),
        Turn(tools=[("Bash", {"command": "cat /sandbox/app.py > /sandbox/out.txt"})], input_tokens=500),
        Turn(text="Fixed: app.py says hello, and out.txt has it.", input_tokens=600, output_tokens=15),
    ]
)


def outcome(run: RunFolder, task_id: str) -> dict[str, Any]:
    """What the replay must give as its original did: status, criteria, calls, tokens and cost (task.json as the
    product reads it, and the run.json row)."""
    result = load_result(run.evaluation(task_id) / "task.json")
    usage = result.total_token_usage
    (row,) = run.summary["task_results"]
    return {
        "status": result.final_status,
        "criteria": [(c.type, c.passed, c.score) for c in result.criteria],
        "calls": [(c.tool, c.status) for turn in result.trajectory for c in turn.calls],
        "turns": [(t.input_tokens, t.output_tokens, t.cost_usd, t.cost_source) for t in result.trajectory],
        "usage": usage.model_dump() if usage else None,
        "cost_complete": result.cost_complete,
        "row": [row[name] for name in ("status", "input_tokens", "output_tokens", "agent_cost_usd", "total_cost_usd")],
        "row cost": (row["cost_complete"], row["cost_source"]),
    }


def test_a_claude_code_run_exported_and_replayed_gives_the_same_results_tokens_and_cost(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    fake = scripted_anthropic(SESSION)
    task = claude_code_task(tmp_path / "tasks", "fix", success_criteria=CRITERIA)
    first, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    assert first.code == 0, first.output
    original = outcome(run, "fix")
    assert original["status"] == "SUCCESS" and original["usage"]["cost_source"] == "reported", original
    assert original["calls"] == [("Write", "success"), ("Read", "success"), ("Edit", "success"), ("Bash", "success")]
    assert original["cost_complete"] is True and original["row cost"] == (True, "reported"), original
    costs = [cost for *_, cost, _ in original["turns"]]
    assert costs[:-1] == [None] * 4 and costs[-1] > 0, original  # Claude Code's one figure, on the last turn

    exported = system_cli("export", run.path, "--format", "atif", "--out", tmp_path / "atif", env={})
    assert exported.code == 0 and "wrote 1 ATIF trajectories" in exported.out, exported.output
    atif_file = tmp_path / "atif" / "default" / "fix" / "00" / "trajectory.atif.json"

    data = yaml.safe_load(task.read_text(encoding="utf-8"))
    data["agent"] = {"type": "replay", "trajectory": str(atif_file)}
    again = write_task(task.parent, data, "fix.replayed.yaml")
    runs = tmp_path / "runs-replayed"
    second = system_cli("run", again, "--runs-dir", runs, env={})  # no credential, no model server
    assert second.code == 0, second.output
    assert "part unknown" not in second.output, second.output
    assert outcome(only_run(runs), "fix") == original
