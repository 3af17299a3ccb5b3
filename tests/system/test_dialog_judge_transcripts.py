"""A dialog's judge transcripts through the installed CLI: the per-turn check's judge call is on disk as the final
scoring's is, and the final scoring that reuses its verdict names it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ..support.fake_anthropic import Script, Turn
from .conftest import SystemCli, anthropic_environment, claude_code_task, new_key

pytestmark = pytest.mark.slow

CRITERIA = [
    {"type": "file_contains", "path": "out.txt", "includes": ["done"], "description": "out.txt says done"},
    {"type": "llm_judge", "description": "judged", "prompt": "Grade the dialog.", "include_dialog": True},
]


def test_the_judge_call_of_a_per_turn_check_leaves_its_transcript_and_the_reused_verdict_names_it(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """Under every_turn + stop_on_criteria_pass the only judge call is the per-turn check's, its verdict reused by
    the final scoring: the guide's judge-<idx>.yaml holds that call, and task.json names it."""
    fake = scripted_anthropic(
        Script(
            [
                Turn(tools=[("Bash", {"command": "echo done > out.txt"})]),
                Turn(text="out.txt says done."),
            ],
            verdicts=[{"score": 0.9, "rationale": "the file is written"}],
        )
    )
    simulation = {
        "enabled": True,
        "persona": "a product owner",
        "goal": "out.txt says done",
        "max_turns": 3,
        "check_criteria": "every_turn",
        "stop_on_criteria_pass": True,
    }
    task = claude_code_task(
        tmp_path / "tasks",
        "dialog",
        initial_prompt="Please write out.txt",
        simulation=simulation,
        success_criteria=CRITERIA,
    )
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    result = run.result("dialog")
    assert (result["simulation"]["stop_reason"], result["final_status"]) == ("criteria_passed", "SUCCESS"), (
        outcome.output
    )
    assert fake.script.judged == 1
    judge = result["success_criteria_results"][1]
    assert judge["evidence"]["reused"] is True
    assert judge["transcript_path"] == judge["evidence"]["transcript"] == "judge-1.yaml"
    transcript = yaml.safe_load((run.evaluation("dialog") / "judge-1.yaml").read_text(encoding="utf-8"))
    assert (transcript["criterion_index"], transcript["score"]) == (1, 0.9)
    assert "Grade the dialog." in transcript["judge_prompt"] and "out.txt says done." in transcript["judge_prompt"]
    assert "the file is written" in transcript["raw_verdict"]
