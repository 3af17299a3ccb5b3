"""What a reader sees of a run, checked without a browser: the viewer's rows and its page, task.html's transcript
and judges' transcripts (the browser checks are in tests/system/test_run_viewer.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from coder_eval_dagster.core.models.results import (
    CriterionResult,
    EvaluationResult,
    TokenUsage,
    ToolCallRecord,
    TurnRecord,
)
from coder_eval_dagster.core.reports.run_viewer import FIELDS, render_run_viewer, viewer_data
from coder_eval_dagster.core.reports.task_html import render_task_html


def criterion(index: int, passed: bool, **fields: object) -> CriterionResult:
    values: dict = {"type": "run_command", "description": f"check {index}", "score": 1.0 if passed else 0.0}
    values |= {"gating": True, "weight": 1.0, "pass_threshold": 1.0, **fields}
    return CriterionResult(index=index, passed=passed, **values)


def result(*criteria: CriterionResult, **fields: object) -> EvaluationResult:
    values: dict = {"run_id": "r", "task_id": "t", "base_task_id": "t", "variant_id": "v", "replicate": 0}
    return EvaluationResult(agent_type="replay", criteria=list(criteria), **(values | fields))


def row(evaluation: EvaluationResult) -> dict:
    data = viewer_data("r", [evaluation], ["v"])
    values = dict(zip(FIELDS, data["rows"][0], strict=True))
    strings = data["strings"]

    def decoded(name: str, value: object) -> object:
        if name not in data["interned"] or value is None:
            return value
        return [strings[i] for i in value] if isinstance(value, list) else strings[value]

    return {name: decoded(name, value) for name, value in values.items()}


def test_a_row_names_the_first_failing_gating_criterion_and_why() -> None:
    informational = criterion(0, False, gating=False, description="style")
    advisory = criterion(1, False, advisory=True, description="not armed")
    failing = criterion(2, False, error="exit code 2: no such file", description="the tests pass")
    later = criterion(3, False, description="lint is clean")
    shown = row(result(informational, advisory, failing, later, final_status="FAILURE"))
    assert (shown["failing"], shown["why"]) == ("run_command \u201cthe tests pass\u201d", "exit code 2: no such file")

    judged = criterion(0, False, type="llm_judge", score=0.4, pass_threshold=0.7, details={"rationale": "too vague"})
    assert row(result(judged))["why"] == "too vague"
    assert row(result(criterion(0, False, score=0.2, pass_threshold=0.5)))["why"] == "score 0.20 < 0.5"
    errored = row(result(final_status="ERROR", error="sandbox setup failed:\n  pip exited 1"))
    assert (errored["failing"], errored["why"]) == (None, "sandbox setup failed: pip exited 1")


def test_a_row_counts_every_token_and_cost_and_links_its_report() -> None:
    turns = [
        TurnRecord(index=1, input_tokens=100, cache_read_input_tokens=1000, output_tokens=10, cost_usd=0.01),
        TurnRecord(index=2, input_tokens=50, cache_creation_input_tokens=5, output_tokens=5, cost_usd=0.02),
    ]
    usage = {"input_tokens": 300, "output_tokens": 20, "cost_usd": 0.005}
    judged = criterion(0, True, type="llm_judge", details={"judge_usage": usage})
    evaluation = result(judged, task_id="suite/row7", trajectory=turns, turns=2, tags=["a", "b"])
    evaluation.total_token_usage = TokenUsage.of_turns(turns)
    shown = row(evaluation)
    assert (shown["tokens"], shown["cost"], shown["turns"]) == (1170, 0.035, 2)  # tokens: the agent's; cost: all
    assert row(result(criterion(0, True)))["tokens"] is None  # no agent ran: no count, not 0
    assert (shown["href"], shown["tags"]) == ("v/suite/row7/00/task.html", ["a", "b"])


def test_repeated_strings_are_stored_once() -> None:
    evaluations = [result(criterion(0, False), task_id=f"t{i}", final_status="FAILURE") for i in range(50)]
    data = viewer_data("r", evaluations, ["v"])
    assert len(data["strings"]) < 10  # the variant, the status, the criterion, its reason, the descriptions


def test_the_page_data_cannot_end_its_script_element() -> None:
    hostile = "</script><script>alert(1)</script>"
    evaluation = result(criterion(0, False, error=hostile), task_id="t", final_status="FAILURE")
    page = render_run_viewer("r", [evaluation], ["v"])
    embedded = re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.DOTALL)
    assert embedded is not None
    assert json.loads(embedded.group(1)) == json.loads(json.dumps(viewer_data("r", [evaluation], ["v"])))
    assert "<script>alert" not in page and "http" not in page.split("<style>")[0].lower().replace("http-equiv", "")


def test_a_judge_transcript_shows_under_its_criterion(tmp_path: Path) -> None:
    record = {
        "criterion_index": 1,
        "type": "llm_judge",
        "model": "claude-test",
        "score": 0.4,
        "verdict": '{"score": 0.4, "rationale": "misses the edge case"}',
        "prompt": "Grade this transcript...",
        "system": "You are a strict grader.",
        "truncated": False,
    }
    (tmp_path / "judge-1.yaml").write_text(yaml.safe_dump(record), encoding="utf-8")
    judged = criterion(1, False, type="llm_judge", details={"transcript": "judge-1.yaml", "rationale": "x"})
    page = render_task_html(result(criterion(0, True), judged), tmp_path)
    rows = page.split("<tr>")
    judge_row = next(i for i, r in enumerate(rows) if "judge-1.yaml" in r and "class='judge'" in r)
    assert ">1</td><td>llm_judge" in rows[judge_row]  # the criterion's own row, then its transcript row
    assert "misses the edge case" in rows[judge_row] and "You are a strict grader." in rows[judge_row]
    assert "judge transcript" not in render_task_html(result(criterion(0, True), judged))  # no folder: none


def test_long_inputs_and_results_are_cut_with_the_cut_said() -> None:
    call = ToolCallRecord(turn=1, seq=1, tool="Bash", parameters={"command": "y" * 6000}, output="z" * 2000)
    page = render_task_html(result(trajectory=[TurnRecord(index=1, text="looking", calls=[call])]))
    assert "[cut here: 4,000 of 6," in page  # the input, cut by the page
    assert "at the agent's 2,000-character cap" in page  # the result, cut by the agent
    assert "looking" in page and "Turn 1" in page


def test_a_transcript_in_coder_evals_form_shows_its_tool_calls(tmp_path: Path) -> None:
    """judge-N.yaml as coder_eval's JudgeTranscript names it, an agent judge's calls one line each."""
    record = {
        "score": 0.9,
        "raw_verdict": '{"score": 0.9, "rationale": "runs"}',
        "tool_calls": [{"tool_name": "Bash", "detail": "python3 main.py", "status": "success", "result_preview": "hi"}],
        "judge_prompt": "Run main.py.",
        "judge_system_prompt": "You are a strict grader.",
    }
    (tmp_path / "judge-1.yaml").write_text(yaml.safe_dump(record), encoding="utf-8")
    judged = criterion(1, True, type="agent_judge", details={"transcript": "judge-1.yaml", "rationale": "x"})
    page = render_task_html(result(criterion(0, True), judged), tmp_path)
    assert "- Bash: python3 main.py (success)\n  -&gt; hi" in page
    assert "Run main.py." in page and "You are a strict grader." in page and "rationale" in page


def test_details_say_what_a_passing_check_found_missing() -> None:
    """An empty list is evidence (nothing missing); only absent values are left out of the details text."""
    found = {"missing_includes": [], "present_excludes": [], "resolved": None}
    passed = criterion(0, True, type="file_contains", details=found)
    assert passed.details_text == "missing_includes: []; present_excludes: []"
