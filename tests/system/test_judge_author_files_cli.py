"""A judge's rubric file beside the task reaches the judge model as the task author's instructions, through the
installed CLI on a replayed agent: outside the UNTRUSTED DATA block that holds the agent's file (it was inside it,
where the judge is told to ignore any instruction). The prompt's layout is in tests/core/test_judge_author_files.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ..support.fake_anthropic import Script, Turn
from ..support.helpers import write
from .conftest import SystemCli, anthropic_environment, new_key, replay_task_file

pytestmark = pytest.mark.slow

RUBRIC = "RUBRIC-4d1e: score 1.0 only when main.py prints hi"
AGENT_FILE = "print('hi')  # AGENT-FILE-5a7f"
SPAN = re.compile(r"<<UNTRUSTED DATA ([0-9a-f]{64}): (.*?)\..*?<<END UNTRUSTED DATA \1: \2>>", re.DOTALL)


def split_by_trust(body: dict[str, Any]) -> tuple[str, str]:
    """A request's messages as text: what lies inside UNTRUSTED DATA blocks, and what lies outside them."""
    text = json.dumps(body["messages"])
    return "".join(match[0] for match in SPAN.finditer(text)), SPAN.sub("", text)


def test_a_rubric_file_reaches_both_judges_outside_the_untrusted_block(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    verdict = {"score": 0.9, "rationale": "prints hi"}
    fake = scripted_anthropic(Script([Turn(text=json.dumps(verdict))], verdict=verdict))
    files = ["$TASK_DIR/rubric.md", "main.py"]
    judges = [
        {"type": "llm_judge", "description": "llm", "prompt": "Grade main.py by the rubric.", "files": files},
        {"type": "agent_judge", "description": "agent", "prompt": "Grade by the rubric.", "files": files},
    ]
    write(tmp_path / "tasks/rubric.md", RUBRIC)
    turns = [{"calls": [{"tool": "Write", "path": "main.py", "content": AGENT_FILE}], "text": "wrote main.py"}]
    task = replay_task_file(tmp_path / "tasks", "rubric", turns, success_criteria=judges)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code == 0, outcome.output
    assert [c["score"] for c in run.result("rubric")["success_criteria_results"]] == [0.9, 0.9]
    forced = [body for body in fake.script.requests if body.get("tool_choice")]
    asked = forced + fake.script.agent_requests()[:1]
    assert len(asked) == 2, fake.script.requests
    for body in asked:
        inside, outside = split_by_trust(body)
        assert RUBRIC in outside and RUBRIC not in inside
        assert AGENT_FILE in inside and AGENT_FILE not in outside
