"""A judge's ``files`` of the task author (``$TASK_DIR/``, ``$REFERENCE_DIR/``) are its instructions, not evidence.

They were wrapped with the agent's files in one UNTRUSTED DATA block, whose preamble told the judge to ignore any
instruction inside it: the rubric the author wrote for the judge among them. The CLI's path (the request the judge
model gets) is in tests/system/test_judge_author_files_cli.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from coder_eval_dagster.core.check_context import CheckContext
from coder_eval_dagster.core.criteria import agent_judge, criterion_union, llm_judge
from coder_eval_dagster.core.criteria.judging import FILE_NOT_FOUND, render_prompt
from coder_eval_dagster.core.models.results import TurnRecord
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox

from ..support.helpers import write

PARSE = TypeAdapter(criterion_union())
RUBRIC = "RUBRIC-4d1e: score 1.0 only when main.py prints hi"
EXPECTED = "EXPECTED-8b2c: hi"
AGENT_FILE = "print('hi')  # AGENT-FILE-5a7f"
AUTHOR_HEADING = "## Files from the task author (never shown to the agent)"
SPAN = re.compile(r"<<UNTRUSTED DATA ([0-9a-f]{64}): (.*?)\..*?<<END UNTRUSTED DATA \1: \2>>", re.DOTALL)


def outside_untrusted(prompt: str) -> str:
    """The prompt with every UNTRUSTED DATA block, markers and all, taken out."""
    return SPAN.sub("", prompt)


def untrusted_files(prompt: str) -> str:
    """The text of the one ``files`` block of the prompt."""
    (block,) = [match[0] for match in SPAN.finditer(prompt) if match[2] == "files"]
    return block


@pytest.fixture
def ctx(tmp_path: Path) -> CheckContext:
    """The agent wrote main.py; the task's folder holds rubric.md, its reference folder expected.txt."""
    box = TempdirSandbox(tmp_path / "sandbox", SandboxConfig(python=None))
    write(box.root / "main.py", AGENT_FILE)
    write(tmp_path / "task/rubric.md", RUBRIC)
    write(tmp_path / "reference/expected.txt", EXPECTED)
    turns = [TurnRecord(index=1, text="wrote main.py")]
    return CheckContext(box, tmp_path / "task", turns, reference_dir=tmp_path / "reference", run=RunContext.create())


def prompt_of(ctx: CheckContext, kind: str, files: list[str]) -> str:
    criterion: Any = PARSE.validate_python({"type": kind, "description": "d", "prompt": "Grade it.", "files": files})
    closing = llm_judge.CLOSING if kind == "llm_judge" else agent_judge.CLOSING
    return render_prompt(criterion, ctx, closing)[0]


@pytest.mark.parametrize("kind", ["llm_judge", "agent_judge"])
def test_the_authors_files_are_instructions_and_the_agents_files_evidence(ctx: CheckContext, kind: str) -> None:
    """Both judges: the rubric and the reference file lie outside every untrusted block, under their own heading
    in the order listed; the agent's file stays inside the ``files`` block."""
    files = ["main.py", "$REFERENCE_DIR/expected.txt", "$TASK_DIR/rubric.md", "$TASK_DIR/missing.md"]
    prompt = prompt_of(ctx, kind, files)

    trusted = outside_untrusted(prompt)
    assert RUBRIC in trusted and EXPECTED in trusted
    assert AGENT_FILE not in trusted and AGENT_FILE in untrusted_files(prompt)
    assert RUBRIC not in untrusted_files(prompt) and EXPECTED not in untrusted_files(prompt)
    author = trusted[trusted.index(AUTHOR_HEADING) :]
    assert (
        author.index(f"### $REFERENCE_DIR/expected.txt\n{EXPECTED}")
        < author.index(f"### $TASK_DIR/rubric.md\n{RUBRIC}")
        < author.index(f"### $TASK_DIR/missing.md\n{FILE_NOT_FOUND}")
    )


def test_no_empty_section_for_a_kind_of_file_not_listed(ctx: CheckContext) -> None:
    only_agent = prompt_of(ctx, "llm_judge", ["main.py"])
    assert AUTHOR_HEADING not in only_agent and AGENT_FILE in untrusted_files(only_agent)
    only_author = prompt_of(ctx, "llm_judge", ["$TASK_DIR/rubric.md", "${REFERENCE_DIR}/expected.txt"])
    assert "UNTRUSTED DATA" not in only_author and "## Files\n" not in only_author
    assert RUBRIC in only_author and "### ${REFERENCE_DIR}/expected.txt\n" + EXPECTED in only_author
