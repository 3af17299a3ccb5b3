"""A codex task through the installed CLI, CODEX_API_KEY only in its environment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage, calc_price

from ..support.fake_openai import ResponsesScript, Step
from ..support.helpers import write_task
from .conftest import (
    ENV_PROBE,
    SystemCli,
    agent_usage,
    carried,
    new_key,
    no_key_anywhere,
    probe_ran,
    proxied_through,
    table_models,
)

pytestmark = pytest.mark.slow
pytest.importorskip("openai_codex", reason="the codex extra is not installed")


WINDOW_PROBE = 'grep model_context_window "$CODEX_HOME/config.toml" > window.txt'


def codex_task(folder: Path, task_id: str, model: str | None, **fields: object) -> Path:
    data = {
        "task_id": task_id,
        "description": "the codex path",
        "initial_prompt": "Create out.txt",
        "sandbox": {"python": None},
        "agent": {"type": "codex", "model": model},
        "success_criteria": [{"type": "file_exists", "path": "out.txt", "description": "out.txt exists"}],
        **fields,
    }
    return write_task(folder, data, f"{task_id}.yaml")


def test_a_codex_task_succeeds_with_usage_and_its_commands_never_see_the_key(
    tmp_path: Path, system_cli: SystemCli, scripted_responses
) -> None:
    key = new_key("sk-proj-")
    fake = scripted_responses(
        ResponsesScript(
            [
                Step(
                    commands=[f"echo hi > out.txt; {WINDOW_PROBE}"],
                    input_tokens=200,
                    cached_tokens=50,
                    output_tokens=30,
                ),
                Step(commands=[ENV_PROBE], input_tokens=300, cached_tokens=100, output_tokens=20),
                Step(text="Done: created out.txt", input_tokens=400, cached_tokens=200, output_tokens=10),
            ]
        )
    )
    # coder_eval's codex agent passes system_prompt as developer instructions (a quote and a newline stay text)
    prompt_text = 'Always answer in "French".\nmodel = "other"'
    task = codex_task(
        tmp_path / "tasks",
        "codex",
        "gpt-fake",
        agent={"type": "codex", "model": "gpt-fake", "system_prompt": prompt_text},
    )
    env = {"CODEX_API_KEY": key, "CODEX_BASE_URL": fake.url, **proxied_through(fake.url)}
    outcome, run = system_cli.run(task, "-D", "agent.context_window=200000", env=env)

    assert outcome.code == 0, outcome.output
    assert fake.script.paths == ["/v1/responses"] * 3  # the three steps, nothing else (no CONNECT through the proxy)
    assert all(json.dumps(prompt_text)[1:-1] in json.dumps(body) for body in fake.script.requests)
    assert {body.get("model") for body in fake.script.requests} == {"gpt-fake"}
    assert carried(key, fake.script.headers)  # the key itself reached the API (and, below, nothing else)
    result = run.result("codex")
    assert result["final_status"] == "SUCCESS", (result["error_message"], result["success_criteria_results"])
    # fresh prompt tokens are recorded as cache creation, cached ones as cache reads (docs/running.md): per turn
    prompt = [
        t["input_tokens"] + t["cache_creation_input_tokens"] + t["cache_read_input_tokens"]
        for t in result["iterations"][0]["turns"]
    ]
    _, tokens_out, cost = agent_usage(result)
    assert prompt == [200, 300, 400] and tokens_out == 60
    # codex reports no price, and nobody prices gpt-fake: the cost stays null, said once, never made up
    assert cost is None and result["total_token_usage"]["cost_source"] == "unknown"
    assert outcome.err.count("no price known for model 'gpt-fake'") == 1, outcome.err
    assert "spend [default]: agent unknown" in outcome.out
    probe_ran(run.evaluation("codex") / "sandbox")
    # coder_eval's context_window reaches codex as its model_context_window
    assert (run.evaluation("codex") / "sandbox" / "window.txt").read_text() == "model_context_window = 200000\n"
    no_key_anywhere(key, system_cli.runs, system_cli.home, output=outcome.output)


def library_price(prompt: int, cached: int, output: int) -> float:
    """gpt-5-codex's price of one turn, straight from genai-prices (codex's fresh prompt is a cache write)."""
    usage = Usage(
        input_tokens=prompt, output_tokens=output, cache_read_tokens=cached, cache_write_tokens=prompt - cached
    )
    return float(calc_price(usage, model_ref="gpt-5-codex", provider_id="openai").total_price)


def test_codex_turns_are_priced_as_they_end_so_that_max_usd_binds(
    tmp_path: Path, system_cli: SystemCli, scripted_responses
) -> None:
    turn = {"input_tokens": 20_000, "cached_tokens": 5_000, "output_tokens": 1_000}
    steps = [Step(commands=[f"echo {n} >> out.txt"], **turn) for n in range(4)] + [Step(text="Done")]
    fake = scripted_responses(ResponsesScript(steps))
    each = library_price(20_000, 5_000, 1_000)  # about $0.029
    task = codex_task(tmp_path / "tasks", "budget", "gpt-5-codex", run_limits={"max_usd": each * 1.5})
    env = {"CODEX_API_KEY": new_key("sk-proj-"), "CODEX_BASE_URL": fake.url, **proxied_through(fake.url)}
    outcome, run = system_cli.run(task, env=env)

    result = run.result("budget")
    assert result["final_status"] == "COST_BUDGET_EXCEEDED", (result["error_message"], outcome.output)
    turns = result["iterations"][0]["turns"]
    assert [(t["cost_usd"], t["cost_source"]) for t in turns] == [(pytest.approx(each), "priced")] * 2
    # stopped on the second turn's usage: the next request may be on its way, never its command run
    assert len(fake.script.requests) in (2, 3)
    assert (run.evaluation("budget") / "sandbox/out.txt").read_text().split() == ["0", "1"]
    usage = result["total_token_usage"]
    assert (usage["total_cost_usd"], usage["cost_source"]) == (pytest.approx(2 * each), "priced")
    spend = run.summary["spend"]
    assert spend["total_cost_usd"] == pytest.approx(2 * each) and spend["cost_complete"]
    assert f"spend [default]: agent ${2 * each:.4f} (priced)" in outcome.out, outcome.out
    assert "no price known" not in outcome.err


def test_a_codex_task_naming_no_model_records_the_model_codex_ran_with(
    tmp_path: Path, system_cli: SystemCli, scripted_responses
) -> None:
    """model_used was null: the configured model copied, though every request named Codex's default."""
    fake = scripted_responses(ResponsesScript([Step(commands=["echo hi > out.txt"]), Step(text="Done")]))
    task = codex_task(tmp_path / "tasks", "default_model", None)
    env = {"CODEX_API_KEY": new_key("sk-proj-"), "CODEX_BASE_URL": fake.url, **proxied_through(fake.url)}
    outcome, run = system_cli.run(task, env=env)

    (model,) = {body["model"] for body in fake.script.requests}
    assert run.result("default_model")["model_used"] == model, outcome.output
    assert table_models(system_cli) == (model, None)


def four_echoes(tmp_path: Path, system_cli: SystemCli, scripted_responses: Any, limits: dict[str, int]) -> Any:
    """The ``capped`` task under ``limits``, run against four turns of one ``echo N >> out.txt`` each, then text."""
    steps = [Step(commands=[f"echo {n} >> out.txt"]) for n in range(4)] + [Step(text="Done")]
    fake = scripted_responses(ResponsesScript(steps))
    env = {"CODEX_API_KEY": new_key("sk-proj-"), "CODEX_BASE_URL": fake.url, **proxied_through(fake.url)}
    return system_cli.run(codex_task(tmp_path / "tasks", "capped", "gpt-5-codex", run_limits=limits), env=env)


def test_codex_stops_at_max_turns_and_a_budget_spent_by_its_last_turn_is_no_error(
    tmp_path: Path, system_cli: SystemCli, scripted_responses
) -> None:
    """max_turns was never read for codex (a coder_eval task's cap ran unbounded); a budget breached by the final
    text turn interrupted a turn already over, and Codex's refusal ended the run as an ERROR."""
    outcome, run = four_echoes(tmp_path, system_cli, scripted_responses, {"max_turns": 2})
    result = run.result("capped")
    assert result["final_status"] == "SUCCESS" and result["max_turns_exhausted"], (result["error_message"], outcome.err)
    assert (run.evaluation("capped") / "sandbox/out.txt").read_text().split() == ["0", "1"]

    last = scripted_responses(ResponsesScript([Step(text="Hi.", output_tokens=100)]))
    env = {"CODEX_API_KEY": new_key("sk-proj-"), "CODEX_BASE_URL": last.url, **proxied_through(last.url)}
    spent = codex_task(tmp_path / "tasks2", "spent", "gpt-5-codex", run_limits={"max_output_tokens": 50})
    runs = tmp_path / "runs2"
    outcome = system_cli("run", spent, "--runs-dir", runs, env=env)
    result = json.loads((runs / "latest/default/spent/00/task.json").read_text())
    assert result["final_status"] == "TOKEN_BUDGET_EXCEEDED", (result["error_message"], outcome.err)


def test_the_call_that_passes_max_tool_calls_is_recorded_as_it_ran(
    tmp_path: Path, system_cli: SystemCli, scripted_responses
) -> None:
    """Codex cannot refuse a call: it is interrupted as the call past the cap starts. The stream is read to the
    turn's end now (it was left at the interrupt): every turn's usage is costed."""
    outcome, run = four_echoes(tmp_path, system_cli, scripted_responses, {"max_tool_calls": 2})
    result = run.result("capped")
    assert "run_limits.max_tool_calls (2) reached: the agent was stopped there" in result["warnings"], outcome.out
    ran = (run.evaluation("capped") / "sandbox/out.txt").read_text().split()
    commands = [call["parameters"]["command"] for it in result["iterations"] for call in it["commands"]]
    # the cut call ran (a fast echo) and is recorded: as it completed, or, interrupted first, as an error
    assert len(ran) == 3 and len(commands) == 3, (commands, ran)
    assert {turn["cost_source"] for turn in result["iterations"][0]["turns"]} == {"priced"}


def test_coder_eval_s_codex_settings_are_applied_and_its_tool_lists_said_to_be_ignored(
    tmp_path: Path, system_cli: SystemCli, scripted_responses
) -> None:
    """coder_eval's CODEX_MODEL (a task naming no model) and CODEX_API_VERSION (Azure) were read from its .env and
    dropped: Codex's own default model ran, with no api-version. allowed_tools / disallowed_tools passed without a
    word, though Codex offered its shell all the same."""
    from coder_eval_dagster.core.agents.codex import TOOL_LISTS_IGNORED

    fake = scripted_responses(ResponsesScript([Step(commands=["echo hi > out.txt"]), Step(text="Done")]))
    task = codex_task(tmp_path / "tasks", "azure", None, agent={"type": "codex", "disallowed_tools": ["Bash"]})
    env = {
        "CODEX_API_KEY": new_key("sk-proj-"),
        "CODEX_BASE_URL": fake.url,
        "CODEX_MODEL": "my-deployment",
        "CODEX_API_VERSION": "2025-04-01-preview",
        **proxied_through(fake.url),
    }
    outcome, run = system_cli.run(task, env=env)
    result = run.result("azure")
    assert {body["model"] for body in fake.script.requests} == {"my-deployment"}, outcome.output
    assert fake.script.paths and all("api-version=2025-04-01-preview" in path for path in fake.script.paths)
    assert (result["model_used"], result["final_status"]) == ("my-deployment", "SUCCESS")
    assert TOOL_LISTS_IGNORED in result["warnings"]


def test_a_refused_codex_request_names_where_it_went_and_what_codex_said_of_it(
    tmp_path: Path, system_cli: SystemCli, scripted_responses
) -> None:
    """Codex's error named the model proxy's loopback address (gone with the run), and its error info (the kind,
    the HTTP status) was dropped."""
    fake = scripted_responses(ResponsesScript([Step(text="Done")], status=401))
    task = codex_task(tmp_path / "tasks", "refused", "gpt-5-codex")
    env = {"CODEX_API_KEY": new_key("sk-proj-"), "CODEX_BASE_URL": fake.url, **proxied_through(fake.url)}
    outcome, run = system_cli.run(task, env=env)
    result = run.result("refused")
    assert result["final_status"] == "ERROR", outcome.output
    assert f"url: {fake.url}/responses" in result["error_message"], result["error_message"]  # not the proxy's
    assert "codexErrorInfo=" in result["error_message"], result["error_message"]
    assert result["error_details"]["error_category"] == "agent_auth_error", result["error_details"]
