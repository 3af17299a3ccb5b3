"""Benchmark: the dialog loop's own overhead per exchange, replayed and with claude-code.

1. replay, a dialog of N exchanges (one Write call and a reply each, a
   ``user:`` message between them), ``check_criteria: every_turn`` with one
   file_exists criterion: the loop's bookkeeping plus the per-turn check.
2. claude-code against the scripted Messages API on 127.0.0.1 (tests/fake_anthropic.py):
   one dialog of M exchanges (one tool call and a reply each, the simulated
   user on the anthropic SDK between them), against M single-shot tasks of
   the same exchange: what continuing one CLI session saves.

    python bench/bench_dialog.py [--exchanges 100] [--claude-exchanges 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_agents import _evaluate, _task, claude_per_task
from tests.support.fake_anthropic import FakeAnthropic, Script, Turn

CHECK = [{"type": "file_exists", "path": "never.txt", "description": "never there: the dialog runs to its end"}]


def simulation(max_turns: int) -> dict:
    return {"enabled": True, "persona": "p", "goal": "g", "max_turns": max_turns, "check_criteria": "every_turn"}


def replay_dialog(exchanges: int) -> float:
    turns: list[dict] = []
    for index in range(exchanges):
        if index:
            turns.append({"user": f"and now file {index}"})
        turns.append({"calls": [{"tool": "Write", "path": f"f{index}.txt", "content": "x"}], "text": f"wrote {index}"})
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "traj.yaml").write_text(yaml.safe_dump({"turns": turns}))
        task = _task(folder, {"type": "replay", "trajectory": "traj.yaml"}, CHECK)
        data = yaml.safe_load(task.read_text()) | {"simulation": simulation(exchanges)}
        task.write_text(yaml.safe_dump(data))
        seconds, result = _evaluate(task, folder / "run")
        assert result.simulation.turns == exchanges, (result.error, result.simulation)
        return seconds


def claude_dialog(exchanges: int) -> float:
    turns = []
    for index in range(exchanges):
        turns += [Turn(tools=[("Bash", {"command": f"echo {index} >> out.txt"})]), Turn(text=f"step {index} done")]
    script = Script(turns, user_replies=[f"go on ({index})" for index in range(exchanges)])
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(script) as url:
        os.environ.update(
            ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-bench-not-a-real-key", CLAUDE_CODE_MAX_RETRIES="0"
        )
        folder = Path(tmp)
        agent = {"type": "claude-code", "permission_mode": "bypassPermissions", "model": "claude-bench"}
        task = _task(folder, agent, CHECK)
        task.write_text(yaml.safe_dump(yaml.safe_load(task.read_text()) | {"simulation": simulation(exchanges)}))
        seconds, result = _evaluate(task, folder / "run")
        assert (result.simulation.turns, result.simulation.stop_reason) == (exchanges, "max_turns"), result.error
        return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--exchanges", type=int, default=100)
    parser.add_argument("--claude-exchanges", type=int, default=5)
    args = parser.parse_args()
    replay = replay_dialog(args.exchanges)
    print(
        f"replay dialog, {args.exchanges} exchanges, every_turn check: {replay:.2f} s, "
        f"{replay / args.exchanges * 1000:.2f} ms per exchange"
    )
    started = time.perf_counter()
    dialog = claude_dialog(args.claude_exchanges)
    singles = claude_per_task(args.claude_exchanges)
    print(
        f"claude-code dialog, {args.claude_exchanges} exchanges: {dialog:.2f} s "
        f"({dialog / args.claude_exchanges:.2f} s per exchange); {args.claude_exchanges} single-shot tasks of one "
        f"exchange: {sum(singles):.2f} s ({sum(singles) / len(singles):.2f} s each); "
        f"bench {time.perf_counter() - started:.1f} s"
    )


if __name__ == "__main__":
    main()
