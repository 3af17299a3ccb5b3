"""A codex task priced by ``--prices``: its fresh prompt, recorded as cache creation, costs the input price."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.fake_openai import ResponsesScript, Step
from .conftest import SystemCli, new_key, proxied_through
from .test_run_codex import codex_task

pytestmark = pytest.mark.slow
pytest.importorskip("openai_codex", reason="the codex extra is not installed")

PRICES = """\
models:
  gpt-5-codex:
    input_per_mtok: 2
    output_per_mtok: 20
    cache_read_per_mtok: 0.5
    cache_write_per_mtok: 3
"""


def test_a_codex_turn_s_fresh_prompt_costs_the_input_price_not_the_cache_write_one(
    tmp_path: Path, system_cli: SystemCli, scripted_responses
) -> None:
    """OpenAI bills no cache writes: the turn cost 1000 x $3/M + 40 x $20/M, the cache-write price, for its fresh
    prompt; the token counts stay as recorded."""
    fake = scripted_responses(
        ResponsesScript(
            [
                Step(commands=["echo hi > out.txt"], input_tokens=1000, cached_tokens=0, output_tokens=40),
                Step(text="Done", input_tokens=2000, cached_tokens=1000, output_tokens=10),
            ]
        )
    )
    prices = tmp_path / "prices.yaml"
    prices.write_text(PRICES)
    task = codex_task(tmp_path / "tasks", "fresh", "gpt-5-codex")
    env = {"CODEX_API_KEY": new_key("sk-proj-"), "CODEX_BASE_URL": fake.url, **proxied_through(fake.url)}
    outcome, run = system_cli.run(task, "--prices", str(prices), env=env)

    assert outcome.code == 0, outcome.output
    turns = run.result("fresh")["iterations"][0]["turns"]
    recorded = [(t["cache_creation_input_tokens"], t["cache_read_input_tokens"], t["output_tokens"]) for t in turns]
    assert recorded == [(1000, 0, 40), (1000, 1000, 10)]
    first = (1000 * 2 + 40 * 20) / 1e6
    second = (1000 * 2 + 1000 * 0.5 + 10 * 20) / 1e6
    assert [(t["cost_usd"], t["cost_source"]) for t in turns] == [
        (pytest.approx(first), "priced"),
        (pytest.approx(second), "priced"),
    ]
    usage = run.result("fresh")["total_token_usage"]
    assert usage["total_cost_usd"] == pytest.approx(first + second)
