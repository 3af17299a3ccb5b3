"""What a reader sees of a run, checked without a browser: the viewer's rows and its page, task.html's transcript
and judges' transcripts (the browser checks are in tests/system/test_run_viewer.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

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

from ..support.synthetic_runs import questioned_results


def criterion(index: int, passed: bool, **fields: object) -> CriterionResult:
    values: dict = {"type": "run_command", "description": f"check {index}", "score": 1.0 if passed else 0.0}
    values |= {"gating": True, "weight": 1.0, "pass_threshold": 1.0, **fields}
    return CriterionResult(index=index, passed=passed, **values)


def result(*criteria: CriterionResult, **fields: object) -> EvaluationResult:
    values: dict = {"run_id": "r", "task_id": "t", "base_task_id": "t", "variant_id": "v", "replicate": 0}
    return EvaluationResult(agent_type="replay", criteria=list(criteria), **(values | fields))


def decoded_rows(data: dict) -> list[dict]:
    """The page's rows as its script reads them: strings looked up, each criterion's description made whole, the
    failing one named by its type and description."""
    strings = data["strings"]

    def looked_up(name: str, value: Any) -> Any:
        if name not in data["interned"] or value is None:
            return value
        return [strings[i] for i in value] if isinstance(value, list) else strings[value]

    def whole(template: int, middle: int) -> tuple[str, str]:
        kind, start, end = data["templates"][template]
        return kind, start + strings[middle] + end

    rows = []
    for values in data["rows"]:
        shown = {name: looked_up(name, value) for name, value in zip(FIELDS, values, strict=True)}
        shown["criteria"] = [whole(*pair) for pair in data["criteria"][shown["criteria"]]]
        failing = None if shown["failing"] is None else shown["criteria"][shown["failing"]]
        shown["failing"] = None if failing is None else f"{failing[0]} \u201c{failing[1]}\u201d"
        rows.append(shown)
    return rows


def page_data(page: str) -> dict:
    """The rows a viewer page carries, as its script parses them."""
    embedded = re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.DOTALL)
    assert embedded is not None
    data: dict = json.loads(embedded.group(1))
    return data


def row(evaluation: EvaluationResult) -> dict:
    (shown,) = decoded_rows(viewer_data("r", [evaluation], ["v"]))
    return shown


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
    paid = {"cost_source": "reported"}
    turns = [
        TurnRecord(index=1, input_tokens=100, cache_read_input_tokens=1000, output_tokens=10, cost_usd=0.01, **paid),
        TurnRecord(index=2, input_tokens=50, cache_creation_input_tokens=5, output_tokens=5, cost_usd=0.02, **paid),
    ]
    usage = {"input_tokens": 300, "output_tokens": 20, "cost_usd": 0.005, "cost_source": "priced"}
    judged = criterion(0, True, type="llm_judge", details={"judge_usage": usage})
    evaluation = result(judged, task_id="suite/row7", trajectory=turns, turns=2, tags=["a", "b"])
    evaluation.total_token_usage = TokenUsage.of_turns(turns)
    shown = row(evaluation)
    assert (shown["tokens"], shown["cost"], shown["turns"]) == (1170, 0.035, 2)  # tokens: the agent's; cost: all
    assert shown["cost_complete"] == 1 and row(result(final_status="TIMEOUT"))["cost_complete"] == 0  # cut short
    assert row(result(criterion(0, True)))["tokens"] is None  # no agent ran: no count, not 0
    assert (shown["href"], shown["tags"]) == ("v/suite/row7/00/task.html", ["a", "b"])


def test_repeated_strings_are_stored_once() -> None:
    evaluations = [result(criterion(0, False), task_id=f"t{i}", final_status="FAILURE") for i in range(50)]
    data = viewer_data("r", evaluations, ["v"])
    assert len(data["strings"]) < 10  # the variant, the status, the criterion, its reason, the descriptions


def test_descriptions_carrying_row_values_keep_a_10000_row_page_under_4_mb() -> None:
    """Three criteria whose descriptions carry the row's question made a 10,000-row page 5.6 MB (each row carried
    them whole, and its failing one again); the page carries what rows share once, and reads back the same."""
    evaluations = questioned_results(10_000)
    page = render_run_viewer("r", evaluations, ["default"])
    assert len(page.encode()) <= 4_000_000  # 2.5 MB
    data = page_data(page)
    shown = {row["task"]: row for row in decoded_rows(data)}
    for evaluation in evaluations:
        descriptions = [(c.type, c.description) for c in evaluation.criteria]
        assert shown[evaluation.task_id]["criteria"] == descriptions
        failing = f"run_command \u201c{evaluation.criteria[0].description}\u201d" if not evaluation.success else None
        assert shown[evaluation.task_id]["failing"] == failing
    assert len(data["templates"]) == 3  # one per criterion of the task, its fixed words stored once


def test_descriptions_that_differ_only_at_their_ends_read_back_whole() -> None:
    """A start and an end every row's description has, never overlapping (``aa``: start ``a``, end ``a``)."""
    groups = {"t": ["aa", "aXa", "aXYa"], "u": ["same", "same"], "w": ["7 + 5 is 12", "7 + 50 is 57", ""]}
    evaluations = [
        result(criterion(0, True, description=text), task_id=f"{base}/{i}", base_task_id=base)
        for base, texts in groups.items()
        for i, text in enumerate(texts)
    ]
    shown = [row["criteria"] for row in decoded_rows(viewer_data("r", evaluations, ["v"]))]
    assert shown == [[("run_command", text)] for texts in groups.values() for text in texts]


def test_the_page_data_cannot_end_its_script_element() -> None:
    hostile = "</script><script>alert(1)</script>"
    evaluation = result(criterion(0, False, error=hostile), task_id="t", final_status="FAILURE")
    page = render_run_viewer("r", [evaluation], ["v"])
    assert page_data(page) == json.loads(json.dumps(viewer_data("r", [evaluation], ["v"])))
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
