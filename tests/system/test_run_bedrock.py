"""The Bedrock route through the installed CLI: ``-b bedrock`` with a bearer token, claude-code plus an llm_judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import (
    SystemCli,
    agent_usage,
    bedrock_environment,
    carried,
    claude_code_task,
    new_key,
    no_key_anywhere,
    probe_ran,
    probing_session,
)

pytestmark = pytest.mark.slow
# the model ids translated to the region's inference profile (us-east-1: us.); the CLI streams, the anthropic SDK's
# Bedrock client (the judge) does not
AGENT_PATH = "/model/us.anthropic.claude-test/invoke-with-response-stream"
JUDGE_PATH = "/model/us.anthropic.claude-sonnet-4-6/invoke"


def test_claude_code_and_an_llm_judge_go_to_bedrock_and_its_tools_never_see_the_token(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    token = new_key("bedrock-")
    fake = scripted_anthropic(probing_session(verdict={"score": 0.9, "rationale": "out.txt is there"}))
    judge = {"type": "llm_judge", "description": "judge", "prompt": "1.0 if out.txt exists", "files": ["out.txt"]}
    task = claude_code_task(
        tmp_path / "tasks",
        "bedrock",
        success_criteria=[{"type": "file_exists", "path": "out.txt", "description": "out.txt exists"}, judge],
    )
    outcome, run = system_cli.run(task, "-b", "bedrock", env=bedrock_environment(fake.url, token))

    assert outcome.code == 0, outcome.output
    assert "API routing: bedrock (region us-east-1, judge transport: bedrock)" in outcome.err
    paths = fake.script.paths
    assert paths.count(AGENT_PATH) == 3 and paths.count(JUDGE_PATH) == 1, paths
    # besides: the CLI's start-up probes (its default models, the inference profiles); never the direct API, no CONNECT
    assert not [path for path in paths if path.startswith(("/v1/", "CONNECT"))], paths
    assert carried(token, fake.script.headers)
    result = run.result("bedrock")
    assert result["final_status"] == "SUCCESS", (result["error_message"], result["success_criteria_results"])
    assert [c["score"] for c in result["success_criteria_results"]] == [1.0, 0.9]
    tokens_in, tokens_out, cost = agent_usage(result)
    assert (tokens_in, tokens_out) == (1200, 80) and cost > 0
    assert result["judge_input_tokens"] > 0 and result["judge_cost_usd"] > 0
    probe_ran(run.evaluation("bedrock") / "sandbox")
    no_key_anywhere(token, system_cli.runs, system_cli.home, output=outcome.output)


def test_model_ids_take_the_regions_inference_profile_and_dotenv_route_settings_are_read(
    tmp_path: Path, system_cli: SystemCli, scripted_anthropic
) -> None:
    """As coder_eval: every model id is its region's inference profile (eu-north-1: ``eu.``), which Bedrock needs to
    serve the newer Claude models on demand; coder_eval's .env settings BEDROCK_MODEL and TELEMETRY_ENABLED are
    taken, not said to be left out."""
    token = new_key("bedrock-")
    fake = scripted_anthropic(probing_session(verdict={"score": 0.9, "rationale": "out.txt is there"}))
    judge = {"type": "llm_judge", "description": "judge", "prompt": "1.0 if out.txt exists"}
    task = claude_code_task(
        tmp_path / "tasks",
        "profiles",
        agent={"type": "claude-code", "permission_mode": "bypassPermissions"},  # coder_eval's default model
        success_criteria=[{"type": "file_exists", "path": "out.txt", "description": "out.txt exists"}, judge],
    )
    (tmp_path / ".env").write_text("BEDROCK_MODEL=claude-haiku-4-5\nTELEMETRY_ENABLED=false\n")  # where it runs
    # a price file names the model as tasks do, not as the region's requests do
    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  anthropic.claude-sonnet-4-6: {input_per_mtok: 1000, output_per_mtok: 1000}\n")
    env = {**bedrock_environment(fake.url, token), "AWS_REGION": "eu-north-1", "API_BACKEND": "bedrock"}
    outcome, run = system_cli.run(task, "--prices", str(prices), env=env)

    assert outcome.code == 0, outcome.output
    assert "not read" not in outcome.err, outcome.err
    paths = fake.script.paths
    assert paths.count("/model/eu.anthropic.claude-sonnet-4-6/invoke-with-response-stream") == 3, paths
    assert paths.count("/model/eu.anthropic.claude-sonnet-4-6/invoke") == 1, paths  # the judge
    assert not [path for path in paths if path.startswith("/model/anthropic.")], paths
    result = run.result("profiles")
    assert result["final_status"] == "SUCCESS"
    judged = result["judge_input_tokens"] + result["judge_output_tokens"]
    assert result["judge_cost_usd"] == pytest.approx(judged * 1000 / 1e6)  # the price file's, not genai-prices'
