"""``turn_timeout`` bounds one exchange with a replayed agent, as the guide's "per-communicate() timeout" and the
claude-code agent bound it, through the installed CLI: it was restarted at each replayed turn, so three turns of
4 s passed a 10 s limit that the same session under claude-code times out."""

from __future__ import annotations

from pathlib import Path

from .conftest import SystemCli, replay_task_file


def test_turn_timeout_bounds_the_whole_exchange_not_each_turn(tmp_path: Path, system_cli: SystemCli) -> None:
    turns = [{"calls": [{"tool": "Bash", "command": f"sleep 4; echo {i} >> out.txt"}]} for i in range(3)]
    task = replay_task_file(
        tmp_path / "tasks",
        "slow",
        [*turns, {"text": "done"}],
        run_limits={"turn_timeout": 10},
        success_criteria=[{"type": "file_exists", "path": "out.txt", "description": "played"}],
    )
    outcome, run = system_cli.run(task, env={}, timeout=120)
    result = run.result("slow")
    assert result["final_status"] == "TIMEOUT", (result["final_status"], outcome.output)
    assert "run_limits.turn_timeout of 10 s reached" in (result["error_message"] or ""), result["error_message"]
    assert result["stage_durations"]["agent"] < 13, result["stage_durations"]  # its 10 s, a loaded machine's cut
