"""Judge verdict reuse through the installed CLI: rescore and --retry-errors call only the judges whose input changed.

The agent is replayed (no model call of its own), so every request the
scripted server records is a judge's: an ``llm_judge`` call forces
``submit_verdict``, the judge agent's requests carry tools without forcing one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..support.fake_anthropic import FakeAnthropic, Script, Turn
from .conftest import RunFolder, SystemCli, anthropic_environment, new_key, replay_task_file

pytestmark = pytest.mark.slow

TURNS = [
    {
        "calls": [
            {"tool": "Write", "path": "main.py", "content": "print('hi')\n"},
            {"tool": "Write", "path": "notes.txt", "content": "draft\n"},
        ],
        "text": "wrote main.py",
    }
]
VERDICT = {"score": 0.9, "rationale": "prints hi"}


def llm_judge(description: str, prompt: str, **fields: Any) -> dict[str, Any]:
    return {"type": "llm_judge", "description": description, "prompt": prompt, **fields}


FILES_JUDGE = llm_judge("reads main.py", "1.0 if main.py prints hi.", files=["main.py"])
OUTPUT_JUDGE = llm_judge("reads the reply", "1.0 if the agent says what it wrote.", include_agent_output=True)
AGENT_JUDGE = {"type": "agent_judge", "description": "runs it", "prompt": "Run main.py; 1.0 if it prints hi."}


def judged_task(folder: Path, *criteria: dict[str, Any]) -> Path:
    """The replay task graded by ``criteria`` (written again to change its rubric: rescore reads it anew)."""
    return replay_task_file(folder / "tasks", "judged", TURNS, success_criteria=list(criteria))


def judge_api(scripted_anthropic: Any) -> FakeAnthropic:
    """The llm_judges' verdict, and the judge agent's final reply."""
    return scripted_anthropic(Script([Turn(text='{"score": 1.0, "rationale": "it runs"}')], verdict=VERDICT))


def llm_calls(fake: FakeAnthropic) -> list[str]:
    """The prompt of every llm_judge call so far."""
    return [body["messages"][0]["content"] for body in fake.script.requests if body.get("tool_choice")]


def criteria(run: RunFolder) -> list[dict[str, Any]]:
    return run.result("judged")["success_criteria_results"]


def reused(run: RunFolder) -> list[bool]:
    return [c["evidence"].get("reused", False) for c in criteria(run)]


def rescore(system_cli: SystemCli, run: RunFolder, env: dict[str, str], *options: str) -> str:
    """``coder-eval rescore RUN [options]``, which must pass; what it printed, its lines unwrapped."""
    done = system_cli("rescore", run.path, *options, env=env)
    assert done.code == 0, done.output
    return " ".join(done.output.split())  # as one line: the terminal wraps long ones


def test_rescore_calls_only_the_judges_whose_prompt_changed_and_no_reuse_calls_them_all(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    fake = judge_api(scripted_anthropic)
    env = anthropic_environment(fake.url, new_key())
    done, run = system_cli.run(judged_task(tmp_path, FILES_JUDGE, OUTPUT_JUDGE), env=env)
    assert done.code == 0, done.output
    assert len(llm_calls(fake)) == len(fake.script.requests) == 2
    first = criteria(run)
    assert reused(run) == [False, False] and all(c["evidence"]["input_hash"].startswith("sha256:") for c in first)
    paid = run.result("judged")["judge_cost_usd"]
    assert paid > 0

    # the rubric unchanged: no request at all, the verdicts kept and marked, nothing paid again
    printed = rescore(system_cli, run, env)
    assert len(fake.script.requests) == 2
    assert reused(run) == [True, True]
    again = criteria(run)
    assert [(c["score"], c["passed"]) for c in again] == [(0.9, True)] * 2
    assert [c["evidence"]["judge_usage"] for c in again] == [c["evidence"]["judge_usage"] for c in first]
    assert [c["token_usage"]["total_cost_usd"] for c in again] == [0.0, 0.0]
    result = run.result("judged")
    assert (result["judge_cost_usd"], result["judge_input_tokens"]) == (0.0, 0)
    spend = run.summary["spend"]
    assert spend["judge_verdicts_reused"] == 2 and spend["judges"]["total_cost_usd"] == 0.0
    assert "spend [default]: agent –, judges – (2 verdicts reused), simulated user –; total $0.0000" in printed
    assert "| – (2 verdicts reused) |" in (run.path / "run.md").read_text()

    # one criterion's prompt changed: that judge alone is called, with its new prompt
    changed = llm_judge("reads the reply", "1.0 if the agent names the file it wrote.", include_agent_output=True)
    judged_task(tmp_path, FILES_JUDGE, changed)
    rescore(system_cli, run, env)
    assert len(fake.script.requests) == 3
    assert "names the file it wrote" in llm_calls(fake)[-1]
    assert reused(run) == [True, False]
    assert run.result("judged")["judge_cost_usd"] == pytest.approx(paid / 2)

    # --no-reuse: every judge is called again
    rescore(system_cli, run, env, "--no-reuse")
    assert len(fake.script.requests) == 5
    assert reused(run) == [False, False]


def test_an_agent_judge_is_reused_only_while_its_sandbox_copy_is_unchanged(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    fake = judge_api(scripted_anthropic)
    env = anthropic_environment(fake.url, new_key())
    done, run = system_cli.run(judged_task(tmp_path, FILES_JUDGE, AGENT_JUDGE), env=env)
    assert done.code == 0, done.output
    assert len(llm_calls(fake)) == 1 and fake.script.agent_requests()
    made = len(fake.script.requests)
    hashes = criteria(run)[1]["evidence"]
    assert hashes["sandbox_hash"].startswith("sha256:") and hashes["input_hash"].startswith("sha256:")

    rescore(system_cli, run, env)
    assert len(fake.script.requests) == made  # the sandbox as it was: no judge agent ran
    assert reused(run) == [True, True]

    # a file the judge agent can read changed, though no prompt did: it runs again; the llm_judge's main.py is as
    # it was, so its verdict stays
    agent_calls = len(fake.script.agent_requests())
    (run.evaluation("judged") / "sandbox" / "notes.txt").write_text("final\n")
    rescore(system_cli, run, env)
    assert len(llm_calls(fake)) == 1 and len(fake.script.agent_requests()) > agent_calls
    assert reused(run) == [True, False]
    evidence = criteria(run)[1]["evidence"]
    assert evidence["input_hash"] == hashes["input_hash"] and evidence["sandbox_hash"] != hashes["sandbox_hash"]


def test_retry_errors_reuses_the_verdicts_of_the_result_it_replaces(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    fake = judge_api(scripted_anthropic)
    env = anthropic_environment(fake.url, new_key())
    done, run = system_cli.run(judged_task(tmp_path, FILES_JUDGE, OUTPUT_JUDGE), env=env)
    assert done.code == 0, done.output
    folder = run.evaluation("judged")

    def errored() -> None:
        """The evaluation as an infrastructure failure after scoring leaves it (e.g. its report could not be
        written): ERROR, its verdicts kept."""
        result = json.loads((folder / "task.json").read_text())
        result.update(final_status="ERROR", error_message="finish failed: OSError: disk full")
        (folder / "task.json").write_text(json.dumps(result))

    errored()
    retried = system_cli("run", "--retry-errors", run.path, env=env)
    assert retried.code == 0, retried.output
    assert len(fake.script.requests) == 2  # the agent replayed the same work: both judges saw the same input
    assert run.result("judged")["final_status"] == "SUCCESS" and reused(run) == [True, True]
    assert json.loads((folder / "task.previous.json").read_text())["final_status"] == "ERROR"

    errored()
    retried = system_cli("run", "--retry-errors", run.path, "--no-reuse", env=env)
    assert retried.code == 0, retried.output
    assert len(fake.script.requests) == 4 and reused(run) == [False, False]
