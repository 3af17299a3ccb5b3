"""Benchmark: the harness's own overhead per agent turn and per claude-code task.

1. replay, 1000 turns: one `Skill` call per turn (no subprocess), so the time
   is the harness's bookkeeping per turn (telemetry, limits, watcher).
2. replay, 1000 turns of one `Bash true` each: the same plus a real command.
3. claude-code against the scripted Messages API on 127.0.0.1 (tests/fake_anthropic.py):
   N tasks of 2 model turns and 1 tool call each, one after the other.

    python bench/bench_agents.py [--turns 1000] [--tasks 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coder_eval_dagster.core.evaluation import evaluate, new_evaluation
from coder_eval_dagster.core.resolution import resolve
from coder_eval_dagster.core.run_spec import RunSpec
from tests.support.fake_anthropic import FakeAnthropic, Script, Turn


def _task(folder: Path, agent: dict, criteria: list[dict], limits: dict | None = None) -> Path:
    data = {
        "task_id": "bench",
        "description": "d",
        "initial_prompt": "p",
        "sandbox": {"python": None},
        "agent": agent,
        "success_criteria": criteria,
        "run_limits": limits or {},
    }
    path = folder / "task.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _evaluate(task: Path, run_dir: Path):
    (row_task,) = resolve(RunSpec(task_paths=[str(task)])).row_tasks
    start = time.perf_counter()
    result = evaluate(new_evaluation("bench", run_dir, row_task, 1, None))
    return time.perf_counter() - start, result


def replay_per_turn(turns: int, call: dict) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "traj.yaml").write_text(yaml.safe_dump({"turns": [{"calls": [call]} for _ in range(turns)]}))
        criteria = [
            {"type": "commands_efficiency", "expected_commands": turns, "description": "calls"},
            {
                "type": "command_executed",
                "command_pattern": "never",
                "min_count": 0,
                "max_count": 0,
                "description": "armed guard",
                "stop_early": {},
            },
        ]
        seconds, result = _evaluate(
            _task(folder, {"type": "replay", "trajectory": "traj.yaml"}, criteria, {"max_turns": turns + 1}),
            folder / "run",
        )
        assert result.turns == turns, result.error
        return seconds


def claude_per_task(tasks: int) -> list[float]:
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        script = Script([Turn(tools=[("Bash", {"command": "echo hi > out.txt"})]), Turn(text="done")])
        with FakeAnthropic(script) as url:
            os.environ.update(
                ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-bench-not-a-real-key", CLAUDE_CODE_MAX_RETRIES="0"
            )
            for index in range(tasks):
                folder = Path(tmp) / str(index)
                folder.mkdir()
                agent = {"type": "claude-code", "permission_mode": "bypassPermissions", "model": "claude-bench"}
                seconds, result = _evaluate(
                    _task(folder, agent, [{"type": "file_exists", "path": "out.txt", "description": "out"}]),
                    folder / "run",
                )
                assert result.final_status == "SUCCESS", result.error
                times.append(seconds)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=5)
    args = parser.parse_args()
    quiet = replay_per_turn(args.turns, {"tool": "Skill", "skill": "noop"})
    print(f"replay, {args.turns} turns of one Skill call: {quiet:.2f} s, {quiet / args.turns * 1000:.2f} ms per turn")
    bash = replay_per_turn(args.turns, {"tool": "Bash", "command": "true"})
    print(f"replay, {args.turns} turns of one Bash call: {bash:.2f} s, {bash / args.turns * 1000:.2f} ms per turn")
    times = claude_per_task(args.tasks)
    print(
        f"claude-code, {args.tasks} tasks x 2 turns: median {statistics.median(times):.2f} s per task "
        f"(min {min(times):.2f}, max {max(times):.2f})"
    )


if __name__ == "__main__":
    main()
