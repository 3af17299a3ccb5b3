"""Judge verdict reuse in the core: what counts as an unchanged judge call, which stored verdict is reused, its spend.

The CLI's paths (rescore, --retry-errors, --no-reuse) against the scripted
API are in tests/system/test_judge_reuse.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from coder_eval_dagster.core.check_context import CheckContext
from coder_eval_dagster.core.criteria import agent_judge, criterion_union, llm_judge
from coder_eval_dagster.core.criteria.judging import render_prompt
from coder_eval_dagster.core.criteria.reuse import VerdictKey, reused, stored_verdicts, tree_hash
from coder_eval_dagster.core.evaluation import new_evaluation, remember_verdicts
from coder_eval_dagster.core.layout import PREVIOUS_RESULT_FILE
from coder_eval_dagster.core.models.report import Spend, TaskRow
from coder_eval_dagster.core.models.results import CriterionResult, EvaluationResult, TokenUsage, TurnRecord
from coder_eval_dagster.core.models.sandbox import SandboxConfig
from coder_eval_dagster.core.reports.run_summary import agent_usd, judges_usd
from coder_eval_dagster.core.resolution import resolve
from coder_eval_dagster.core.run_context import RunContext
from coder_eval_dagster.core.run_spec import RunSpec
from coder_eval_dagster.core.sandbox.tempdir import TempdirSandbox
from coder_eval_dagster.core.scoring import criterion_result

from ..support.helpers import replay_task, write, write_task

PARSE = TypeAdapter(criterion_union())
LONG = "x" * 50


@pytest.fixture
def ctx(tmp_path: Path) -> CheckContext:
    """A sandbox holding main.py (longer than the judges below show of it) and a replayed reply."""
    box = TempdirSandbox(tmp_path / "sandbox", SandboxConfig(python=None))
    write(box.root / "main.py", LONG)
    return CheckContext(box, tmp_path, [TurnRecord(index=1, text="wrote main.py")], run=RunContext.create())


def parsed(kind: str, **fields: Any) -> Any:
    return PARSE.validate_python({"type": kind, "description": "d", "prompt": "Grade main.py.", **fields})


def llm_key(ctx: CheckContext, **fields: Any) -> VerdictKey:
    criterion = parsed("llm_judge", files=["main.py"], include_agent_output=True, max_file_chars=10, **fields)
    prompt, _ = render_prompt(criterion, ctx, llm_judge.CLOSING)
    return llm_judge.verdict_key(criterion, ctx, prompt)


def agent_key(ctx: CheckContext, **fields: Any) -> VerdictKey:
    criterion = parsed("agent_judge", **fields)
    config = agent_judge.judge_config(criterion.agent)
    prompt, _ = render_prompt(criterion, ctx, agent_judge.CLOSING)
    with agent_judge.judge_workspace(ctx, config) as (workspace, _):
        return agent_judge.verdict_key(criterion, config, "claude-sonnet-4-6", prompt, ctx, workspace)


# ----------------------------------------------------------------------------- what counts as unchanged


@pytest.mark.parametrize(
    "change",
    [
        {"prompt": "Grade main.py strictly."},
        {"model": "anthropic.claude-haiku-4-5"},
        {"temperature": 0.5},
        {"max_tokens": 500},
        {"include_tool_calls": True},
    ],
)
def test_llm_judge_hash_changes_with_each_part_of_the_call(ctx: CheckContext, change: dict[str, Any]) -> None:
    assert llm_key(ctx, **change) != llm_key(ctx)


@pytest.mark.parametrize(
    "change", [{"description": "other"}, {"weight": 3.0}, {"pass_threshold": 0.9}, {"capture_transcript": False}]
)
def test_llm_judge_hash_ignores_what_the_judge_is_not_shown(ctx: CheckContext, change: dict[str, Any]) -> None:
    assert llm_key(ctx, **change) == llm_key(ctx)


def test_files_count_by_their_bytes_not_by_the_text_the_prompt_shows(ctx: CheckContext) -> None:
    criterion = parsed("llm_judge", files=["main.py"], max_file_chars=10)
    before, key = render_prompt(criterion, ctx, llm_judge.CLOSING)[0], llm_key(ctx)
    write(ctx.sandbox.root / "main.py", LONG[:-1] + "y")  # past the 10 characters the judge is shown
    assert render_prompt(criterion, ctx, llm_judge.CLOSING)[0] == before
    assert llm_key(ctx) != key
    write(ctx.sandbox.root / "main.py", LONG)
    assert llm_key(ctx) == key  # the same bytes again: the same call
    (ctx.sandbox.root / "main.py").unlink()
    assert llm_key(ctx) != key  # a missing file is a change too


def test_the_agent_reply_shown_is_part_of_the_hash(ctx: CheckContext) -> None:
    key = llm_key(ctx)
    ctx.trajectory = [TurnRecord(index=1, text="wrote main.py and tests")]
    assert llm_key(ctx) != key


def test_agent_judge_hash_covers_its_settings_and_its_sandbox_copy(ctx: CheckContext) -> None:
    key = agent_key(ctx)
    assert key.sandbox_hash is not None and agent_key(ctx) == key
    for change in ({"max_turns": 7}, {"turn_timeout": 60}, {"agent": {"model": "anthropic.claude-haiku-4-5"}}):
        assert agent_key(ctx, **change).input_hash != key.input_hash, change
    write(ctx.sandbox.root / ".claude/settings.json", "{}")  # never copied for the judge: no change to what it sees
    assert agent_key(ctx) == key
    write(ctx.sandbox.root / "notes.txt", "new")  # a file no prompt names, but the judge agent can read
    changed = agent_key(ctx)
    assert changed.input_hash == key.input_hash and changed.sandbox_hash != key.sandbox_hash


def test_tree_hash_is_the_content_only(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        write(folder / "a/b.txt", "b")
    os.utime(two / "a/b.txt", (0, 0))  # times are not content
    assert tree_hash(one) == tree_hash(two)
    for change in (
        lambda: write(two / "a/b.txt", "B"),
        lambda: write(two / "empty.txt", ""),
        lambda: (two / "new_folder").mkdir(),
        lambda: (two / "link").symlink_to("a/b.txt"),
    ):
        change()
        assert tree_hash(two) != tree_hash(one)
        for name in ("a", "empty.txt", "new_folder", "link"):
            target = two / name
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir() and name != "a":
                target.rmdir()
        write(two / "a/b.txt", "b")
        assert tree_hash(two) == tree_hash(one)


# ----------------------------------------------------------------------------- which verdict is reused


def stored(index: int = 0, kind: str = "llm_judge", error: str | None = None, **details: Any) -> CriterionResult:
    usage = {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.0006, "cost_source": "priced"}
    return CriterionResult(
        index=index,
        type=kind,
        description="d",
        score=0.8,
        passed=True,
        gating=True,
        weight=1.0,
        pass_threshold=0.5,
        error=error,
        details={"model": "m", "rationale": "ok", "judge_usage": usage, **details},
    )


def test_only_a_stored_verdict_of_the_same_call_is_reused(ctx: CheckContext) -> None:
    key = VerdictKey("sha256:a")
    criterion = parsed("llm_judge", pass_threshold=0.9)
    same = stored(input_hash="sha256:a")
    assert reused(criterion, ctx, key) is None  # nothing stored
    for verdicts in (
        {0: stored(input_hash="sha256:b")},  # another input
        {0: stored(kind="agent_judge", input_hash="sha256:a")},  # another type at that index
        {1: stored(index=1, input_hash="sha256:a")},  # another index
        {0: stored(input_hash="sha256:a", sandbox_hash="sha256:s")},  # it also saw a sandbox this one does not
    ):
        ctx.verdicts = verdicts
        assert reused(criterion, ctx, key) is None, verdicts
    ctx.verdicts = {0: same}
    outcome = reused(criterion, ctx, key)
    assert outcome is not None and outcome.score == 0.8 and outcome.error is None
    assert outcome.details == {**same.details, "reused": True}
    result = criterion_result(0, criterion, outcome, None)
    assert result.reused and not result.passed  # the verdict kept; its pass decided by today's threshold


def test_failed_and_unhashed_verdicts_are_not_offered_for_reuse() -> None:
    kept = stored(input_hash="sha256:a")
    offered = stored_verdicts(
        [kept, stored(index=1, error="judge call failed", input_hash="sha256:b"), stored(index=2)]
    )
    assert offered == {0: kept}


# ----------------------------------------------------------------------------- spend


def evaluation_result(*criteria: CriterionResult, **fields: Any) -> EvaluationResult:
    values: dict[str, Any] = {"run_id": "r", "task_id": "t", "base_task_id": "t", "variant_id": "v", "replicate": 0}
    return EvaluationResult(agent_type="replay", criteria=list(criteria), **(values | fields))


def test_a_reused_verdict_keeps_its_original_usage_and_costs_nothing_again() -> None:
    fresh = stored(input_hash="sha256:a")
    again = stored(index=1, input_hash="sha256:b", reused=True)
    assert again.judge_usage == fresh.judge_usage  # what the verdict cost when it was made
    assert fresh.token_usage is not None and fresh.token_usage.total_cost_usd == 0.0006
    assert again.token_usage is not None and (again.token_usage.total_cost_usd, again.token_usage.spent) == (0.0, False)
    result = evaluation_result(fresh, again)
    assert (result.judge_cost_usd, result.judge_input_tokens) == (0.0006, 100)
    spend = Spend.of([TaskRow.of(result)])
    assert spend.judge_verdicts_reused == 1 and spend.judges is not None and spend.judges.total_cost_usd == 0.0006
    assert judges_usd(spend) == "$0.0006 (priced) (1 verdict reused)"
    alone = evaluation_result(again)
    assert alone.judge_cost_usd == 0.0
    assert judges_usd(Spend.of([TaskRow.of(alone)])) == "– (1 verdict reused)"


# ----------------------------------------------------------------------------- where the verdicts come from


def test_remember_verdicts_from_the_rescored_result_or_the_set_aside_one(tmp_path: Path) -> None:
    write(tmp_path / "traj.yaml", "turns: [{text: done}]\n")
    task = write_task(
        tmp_path, replay_task(success_criteria=[{"type": "file_exists", "path": "a", "description": "a"}])
    )
    (row_task,) = resolve(RunSpec(task_paths=[str(task)])).row_tasks
    evaluation = new_evaluation("r", tmp_path / "run", row_task, 0, None)
    verdict = stored(input_hash="sha256:a")
    assert remember_verdicts(evaluation, reuse=True).verdicts == {}  # a first scoring: nothing stored

    evaluation.folder.mkdir(parents=True)
    previous = evaluation_result(verdict, final_status="ERROR")
    write(evaluation.folder / PREVIOUS_RESULT_FILE, previous.model_dump_json())
    assert remember_verdicts(evaluation, reuse=True).verdicts == {0: verdict}  # --retry-errors set it aside
    assert remember_verdicts(evaluation, reuse=False).verdicts == {}  # --no-reuse

    rescored = stored(input_hash="sha256:new")
    evaluation.result.criteria = [rescored]  # a rescore's task.json, as it re-read it
    assert remember_verdicts(evaluation, reuse=True).verdicts == {0: rescored}

    evaluation.result.criteria = []
    write(evaluation.folder / PREVIOUS_RESULT_FILE, "{not json")
    assert remember_verdicts(evaluation, reuse=True).verdicts == {}  # unreadable: no reuse, no failure


def test_an_agent_cut_short_by_a_timeout_makes_the_spend_a_floor() -> None:
    """A TIMEOUT row's cost is a floor (its ``cost_complete`` is false): so are the run's spend and its line."""
    usage = TokenUsage(uncached_input_tokens=10, output_tokens=5, total_cost_usd=0.08, cost_source="reported")
    rows = [
        TaskRow.of(evaluation_result(final_status=status, total_token_usage=usage)) for status in ("TIMEOUT", "SUCCESS")
    ]
    spend = Spend.of(rows)
    assert (spend.agents_cut_short, spend.cost_complete) == (1, False) and not rows[0].cost_complete
    assert agent_usd(spend) == "≥ $0.1600 (reported) (1 cut short by a timeout)"
    whole = Spend.of(rows[1:])
    assert whole.cost_complete and agent_usd(whole) == "$0.0800 (reported)"
