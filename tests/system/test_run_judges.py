"""`llm_judge` and `agent_judge` through the installed CLI, on a replayed agent: only the judges call the model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage, calc_price

from ..support.fake_anthropic import Script, Turn
from .conftest import (
    SystemCli,
    agent_usage,
    anthropic_environment,
    carried,
    new_key,
    no_key_anywhere,
    replay_task_file,
    stop_group,
    task_file,
)

pytestmark = pytest.mark.slow

# The judge works in a copy of the sandbox that is removed afterwards, so its probe prints what it finds, where the
# judge's transcript (judge-1.yaml) keeps it: in hex, which redaction does not know and the leak search does.
JUDGE_PROBE = (
    "echo probe ran: $(env | wc -l) variables; { env; cat /proc/$PPID/environ /proc/self/environ; } 2>/dev/null"
    " | tr '\\0' '\\n' | grep -o 'sk-ant-[0-9a-f]*' | sort -u | od -An -tx1 | tr -d ' \\n'"
)


def test_both_judges_pass_with_their_usage_recorded_and_the_judge_agent_never_sees_the_key(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    key = new_key()
    fake = scripted_anthropic(
        Script(
            [
                Turn(tools=[("Bash", {"command": JUDGE_PROBE})]),
                Turn(text='{"score": 1.0, "rationale": "prints hi", "findings": ["runs", "prints hi"]}'),
            ],
            verdict={"score": 0.9, "rationale": "prints hi"},
        )
    )
    task = replay_task_file(
        tmp_path / "tasks",
        "judged",
        [{"calls": [{"tool": "Write", "path": "main.py", "content": "print('hi')\n"}], "text": "wrote main.py"}],
        success_criteria=[
            {"type": "llm_judge", "description": "llm", "prompt": "1.0 if main.py prints hi.", "files": ["main.py"]},
            {
                "type": "agent_judge",
                "description": "agent",
                "prompt": "Run main.py; 1.0 if it prints hi.",
                "max_turns": 5,
            },
        ],
    )
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, key))

    assert outcome.code == 0, outcome.output
    assert "API routing: anthropic_direct (judge transport: anthropic)" in outcome.err  # the judges call a model
    forced = [body for body in fake.script.requests if body.get("tool_choice")]
    assert len(forced) == 1 and len(fake.script.agent_requests()) == 2  # the llm_judge's call, the judge agent's two
    assert fake.script.paths and all(path.startswith("/v1/messages") for path in fake.script.paths), fake.script.paths
    assert carried(key, fake.script.headers)
    result = run.result("judged")
    assert result["final_status"] == "SUCCESS", (result["error_message"], result["success_criteria_results"])
    criteria = result["success_criteria_results"]
    assert [(c["score"], c["passed"], c["error"]) for c in criteria] == [(0.9, True, None), (1.0, True, None)]
    assert [(c["result_kind"], c["token_usage"]["uncached_input_tokens"] > 0) for c in criteria] == [
        ("judge", True)
    ] * 2
    usages = [c["evidence"]["judge_usage"] for c in criteria]
    assert all(usage["input_tokens"] > 0 and usage["output_tokens"] > 0 for usage in usages), usages
    assert result["judge_input_tokens"] == sum(usage["input_tokens"] for usage in usages)
    # the llm_judge's call priced at the library's price of its model; the judge agent's CLI reported its own
    llm, agent = usages
    model = criteria[0]["evidence"]["model"]
    read, write = llm["cache_read_input_tokens"], llm["cache_creation_input_tokens"]
    tokens = Usage(
        input_tokens=llm["input_tokens"] + read + write,
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=llm["output_tokens"],
    )
    price = float(calc_price(tokens, model_ref=model, provider_id="anthropic").total_price)
    assert (llm["cost_source"], llm["cost_usd"]) == ("priced", pytest.approx(price)) and price > 0
    assert agent["cost_source"] == "reported" and agent["cost_usd"] > 0
    assert result["judge_cost_usd"] == pytest.approx(llm["cost_usd"] + agent["cost_usd"])
    assert run.summary["spend"]["judges"]["cost_source"] == "mixed"  # one priced, one reported: not "priced"
    tokens_in, _, cost = agent_usage(result)
    assert (tokens_in, cost) == (0, None)  # the replayed agent called no model
    assert "probe ran:" in (run.evaluation("judged") / "judge-1.yaml").read_text()
    # coder_eval's judge fields: the transcript beside task.json, the findings a verdict gave
    assert [(c["transcript_path"], c["findings"]) for c in criteria] == [
        ("judge-0.yaml", []),
        ("judge-1.yaml", ["runs", "prints hi"]),
    ]
    no_key_anywhere(key, system_cli.runs, system_cli.home, output=outcome.output)


def test_an_agent_judge_cut_off_by_its_turn_timeout_records_what_its_turns_spent(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """Claude Code reports a cost only at the end: a judge cut off records its turns' tokens, priced, as a floor
    (the run's cost is then incomplete), not the zero spend it once recorded as complete."""
    fake = scripted_anthropic(
        Script([Turn(tools=[("Bash", {"command": "tail -f /dev/null"})], input_tokens=700, output_tokens=60)])
    )
    judge = {"type": "agent_judge", "description": "slow", "prompt": "Inspect.", "turn_timeout": 15}  # (a loaded start)
    task = replay_task_file(tmp_path / "tasks", "cut", [{"text": "nothing to do"}], success_criteria=[judge])
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    assert outcome.code == 1, outcome.output
    (criterion,) = run.result("cut")["success_criteria_results"]
    assert "turn_timeout" in criterion["error"]
    usage = criterion["evidence"]["judge_usage"]
    # the tokens its turns began with, priced: a floor (a turn's output is counted as it began), said as one
    assert (usage["input_tokens"], usage["cost_source"]) == (700, "unknown") and usage["cost_usd"] > 0, usage
    assert run.summary["spend"]["cost_complete"] is False and "judges ≥ $" in outcome.out, outcome.out


def test_a_folder_reference_the_judges_echo_reaches_no_artifact(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """Both judges quote a line of a ``reference: {directory}`` file, and the judge agent is shown the file through
    ``$REFERENCE_DIR``: task.json, judge-N.yaml, task.html and run.json keep neither."""
    line = "SECRET_ANSWER = 4242  # REFERENCE-FILE-3e8d"
    fake = scripted_anthropic(
        Script(
            [Turn(text=f'{{"score": 0.95, "rationale": "reference: {line}"}}')],
            verdict={"score": 0.95, "rationale": f"The reference is {line} and matches."},
        )
    )
    tasks = tmp_path / "tasks"
    (tasks / "ref").mkdir(parents=True)
    (tasks / "ref/solution.py").write_text(f"{line}\n", encoding="utf-8")
    judges = [
        {"type": "llm_judge", "description": "llm", "prompt": "Grade.", "include_reference": True},
        {
            "type": "agent_judge",
            "description": "agent",
            "prompt": "Grade.",
            "include_reference": True,
            "files": ["$REFERENCE_DIR/solution.py"],
            "max_turns": 5,
        },
    ]
    task = replay_task_file(tasks, "echo", [{"text": "done"}], reference={"directory": "ref"}, success_criteria=judges)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code == 0, outcome.output
    assert "REFERENCE-FILE-3e8d" in str(fake.script.requests)  # the judges are shown the reference
    result = run.result("echo")
    assert [c["evidence"]["rationale"] for c in result["success_criteria_results"]] == [
        "The reference is [reference removed] and matches.",
        "reference: [reference removed]",
    ]
    evaluation = run.evaluation("echo")
    assert "### $REFERENCE_DIR/solution.py" in (evaluation / "judge-1.yaml").read_text(encoding="utf-8")
    artifacts = [evaluation / name for name in ("task.json", "judge-0.yaml", "judge-1.yaml", "task.html")]
    artifacts.append(run.path / "run.json")
    assert not [path.name for path in artifacts if "REFERENCE-FILE-3e8d" in path.read_text(encoding="utf-8")]


def test_judges_as_coder_evals_a_0_7_default_threshold_and_enabled_false_which_calls_nothing(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """A coder_eval task passes here unchanged: its judge without ``pass_threshold`` passes at 0.8 (the judges'
    default is 0.7, not 0.9), and a judge with ``enabled: false`` scores 1.0 with no request made."""
    fake = scripted_anthropic(Script([], verdict={"score": 0.8, "rationale": "mostly right"}))
    judges = [
        {"type": "llm_judge", "description": "graded", "prompt": "Grade."},
        {"type": "llm_judge", "description": "off", "prompt": "Grade.", "enabled": False},
        {"type": "agent_judge", "description": "off too", "prompt": "Grade.", "enabled": False},
    ]
    task = replay_task_file(tmp_path / "tasks", "defaults", [{"text": "done"}], success_criteria=judges)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code == 0, outcome.output
    assert len(fake.script.requests) == 1 and fake.script.requests[0]["tool_choice"]["name"] == "submit_verdict"
    result = run.result("defaults")
    assert result["final_status"] == "SUCCESS", result["success_criteria_results"]
    criteria = result["success_criteria_results"]
    assert [(c["score"], c["passed"], c["pass_threshold"], c["error"]) for c in criteria] == [
        (0.8, True, 0.7, None),
        (1.0, True, 0.7, None),
        (1.0, True, 0.7, None),
    ]
    assert [c["details"] for c in criteria[1:]] == ["(skipped: enabled=false)"] * 2
    assert sorted(path.name for path in run.evaluation("defaults").glob("judge-*.yaml")) == ["judge-0.yaml"]


def test_of_two_verdict_calls_the_last_one_counts(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """A model that calls submit_verdict twice in its reply is read as coder_eval reads it: the last call."""
    calls = [{"score": 0.2, "rationale": "first"}, {"score": 0.9, "rationale": "second"}]
    fake = scripted_anthropic(Script([], verdict=calls))
    judges = [{"type": "llm_judge", "description": "twice", "prompt": "Grade.", "pass_threshold": 0.5}]
    task = replay_task_file(tmp_path / "tasks", "twice", [{"text": "done"}], success_criteria=judges)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code == 0, outcome.output
    (criterion,) = run.result("twice")["success_criteria_results"]
    assert (criterion["score"], criterion["passed"]) == (0.9, True)
    assert "second" in criterion["details"]


def test_a_verdict_score_outside_0_1_is_clamped_for_both_judges(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic: Any
) -> None:
    """As coder_eval: 1.5 scores 1.0 and -0.2 scores 0.0, no error (a score that is no number stays one)."""
    fake = scripted_anthropic(
        Script([Turn(text='{"score": -0.2, "rationale": "nothing works"}')], verdict={"score": 1.5, "rationale": "ok"})
    )
    judges = [
        {"type": "llm_judge", "description": "llm", "prompt": "Grade."},
        {"type": "agent_judge", "description": "agent", "prompt": "Grade.", "max_turns": 3},
    ]
    task = replay_task_file(tmp_path / "tasks", "clamped", [{"text": "done"}], success_criteria=judges)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))

    assert outcome.code == 1, outcome.output  # the agent judge's 0.0 fails the task; no error made it
    criteria = run.result("clamped")["success_criteria_results"]
    assert [(c["score"], c["passed"], c["error"]) for c in criteria] == [(1.0, True, None), (0.0, False, None)]
    assert run.result("clamped")["final_status"] == "FAILURE"


def test_ctrl_c_ends_a_run_whose_judge_waits_on_a_stalled_model(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """The judge's model call is waited for, not sat in: the first Ctrl-C ends the run (it waited for the call's
    timeout, five minutes, and then its retries) and no verdict is written for the interrupted scoring."""
    fake = scripted_anthropic(Script([], verdict={"score": 1.0, "rationale": "ok"}, latency_s=120))
    task = replay_task_file(
        tmp_path / "tasks",
        "stalled",
        [{"calls": [{"tool": "Write", "path": "a.txt", "content": "a"}], "text": "done"}],
        success_criteria=[{"type": "llm_judge", "description": "llm", "prompt": "1.0 if a.txt exists."}],
    )
    env = anthropic_environment(fake.url, new_key())
    process = system_cli.start("run", task, "--runs-dir", tmp_path / "runs", env=env, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not fake.script.requests and time.monotonic() < deadline:  # the judge's call is on its way
            time.sleep(0.2)
        assert fake.script.requests, "the judge never called the model"
        interrupted = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=60) == 130
        assert time.monotonic() - interrupted < 15
    finally:
        stop_group(process)
    assert len(fake.script.requests) == 1  # no retry started after the interrupt
    assert not list((tmp_path / "runs").glob("latest/default/stalled/00/task.json"))  # resumable, not a verdict


def test_a_judge_that_gave_no_answer_is_left_out_of_the_suite_metrics(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """A judge outage on one row of four: the row's criterion scores 0 with the error (the guide's rule), but it was
    not judged, so the suite's mean is over the three judged rows and its completion_rate falls to 0.75, as
    coder_eval's does (its outage is an ERROR row): a completion gate catches an outage."""
    fake = scripted_anthropic(Script([], verdict={"score": 1.0, "rationale": "ok"}, fail_first=4, fail_status=500))
    judge = {"type": "llm_judge", "description": "llm", "prompt": "1.0 if a.txt exists."}
    task = replay_task_file(
        tmp_path / "tasks",
        "judged",
        [{"calls": [{"tool": "Write", "path": "a.txt", "content": "a"}], "text": "done"}],
        dataset={"rows": [{"id": f"r{n}"} for n in range(4)]},
        success_criteria=[judge | {"suite_thresholds": {"mean": 0.9, "completion_rate": 1.0}}],
    )
    env = anthropic_environment(fake.url, new_key())
    outcome, run = system_cli.run(task, "--judge-concurrency", "1", env=env)

    assert outcome.code == 1, outcome.output
    rows = [run.result(f"judged/r{n}") for n in range(4)]
    statuses = sorted(criterion["evaluation_status"] for row in rows for criterion in row["success_criteria_results"])
    assert statuses == ["evaluated"] * 3 + ["not_evaluated"], outcome.output
    (entry,) = run.summary["suite"]
    assert (entry["metrics"]["mean"], entry["metrics"]["completion_rate"]) == (1.0, 0.75)
    assert "suite judged [default] #0 llm_judge completion_rate 0.75 >= 1: NOT met" in outcome.out  # whose metric
    history = system_cli("history", system_cli.runs, "--format", "json", env={})  # the tables say it as well
    assert history.code == 0 and json.loads(history.out)["failing_criteria"] == [], history.output
    assert {t["metric"]: t["passed"] for t in entry["thresholds"]} == {"mean": True, "completion_rate": False}


def test_the_spend_line_says_a_judges_cost_is_unknown(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """An agentless task's judge on a model nobody prices spent tokens of unknown cost: the line says so (it said
    nothing at all)."""
    fake = scripted_anthropic(Script([], verdict={"score": 1.0, "rationale": "ok"}))
    judge = {"type": "llm_judge", "description": "llm", "prompt": "1.0 if a.txt exists.", "model": "claude-foo-9"}
    task = task_file(tmp_path / "tasks", "unpriced", agent={"type": "none"}, success_criteria=[judge])
    outcome, _ = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    assert outcome.code == 0, outcome.output
    assert "spend [default]: agent –, judges unknown, simulated user –; total –" in outcome.out, outcome.out


def test_an_agent_judge_is_offered_the_write_tools_its_block_names(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """As coder_eval lays the judge's block over its defaults (Write was silently dropped); the defaults offer none."""
    fake = scripted_anthropic(Script([Turn(text='{"score": 1.0, "rationale": "fine"}')] * 2))
    named = {"allowed_tools": ["Bash", "Read", "Write"]}
    judges = [
        {"type": "agent_judge", "description": "writer", "prompt": "Grade.", "max_turns": 3, "agent": named},
        {"type": "agent_judge", "description": "default", "prompt": "Grade.", "max_turns": 3},
    ]
    task = replay_task_file(tmp_path / "tasks", "judged", [{"text": "done"}], success_criteria=judges)
    outcome, run = system_cli.run(task, env=anthropic_environment(fake.url, new_key()))
    assert outcome.code == 0 and run.result("judged")["final_status"] == "SUCCESS", outcome.output
    offered = sorted(sorted(tool["name"] for tool in body["tools"]) for body in fake.script.agent_requests())
    assert offered == [["Bash", "Glob", "Grep", "Read"], ["Bash", "Read", "Write"]], offered
