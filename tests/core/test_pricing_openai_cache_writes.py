"""OpenAI bills no cache writes: a codex turn's fresh prompt, recorded as cache creation, costs the input price."""

from __future__ import annotations

import pytest

from coder_eval_dagster.core import price_sources
from coder_eval_dagster.core.models.prices import ModelPrice
from coder_eval_dagster.core.models.results import TokenUsage
from coder_eval_dagster.core.pricing import PriceBook

# a codex turn: 1000 fresh prompt tokens (recorded as cache creation), none cached, 40 out
CODEX_TURN = TokenUsage(cache_creation_input_tokens=1000, output_tokens=40)
BOOK = PriceBook(
    {
        "gpt-5-codex": ModelPrice(
            input_per_mtok=2, output_per_mtok=20, cache_read_per_mtok=0.5, cache_write_per_mtok=3
        ),
        "claude-sonnet-4-5": ModelPrice(input_per_mtok=3, output_per_mtok=15, cache_write_per_mtok=3.75),
    }
)


def test_a_price_file_prices_an_openai_model_s_cache_creation_at_its_input_price():
    assert BOOK.cost("gpt-5-codex", CODEX_TURN) == pytest.approx((1000 * 2 + 40 * 20) / 1e6)  # not 1000 x $3/M
    cached = CODEX_TURN.model_copy(update={"cache_read_input_tokens": 4000})
    assert BOOK.cost("gpt-5-codex", cached) == pytest.approx((1000 * 2 + 4000 * 0.5 + 40 * 20) / 1e6)


def test_a_claude_model_s_cache_creation_keeps_its_cache_write_price():
    claude_turn = TokenUsage(cache_creation_input_tokens=1000, output_tokens=40)
    assert BOOK.cost("claude-sonnet-4-5", claude_turn) == pytest.approx((1000 * 3.75 + 40 * 15) / 1e6)


def test_the_recorded_token_counts_are_kept_with_the_cost():
    priced = BOOK.priced("gpt-5-codex", CODEX_TURN)
    assert (priced.cache_creation_input_tokens, priced.uncached_input_tokens) == (1000, 0)
    assert (priced.total_cost_usd, priced.cost_source) == (pytest.approx(0.0028), "priced")


def test_the_library_and_installed_sources_see_the_fresh_prompt_as_input(monkeypatch):
    fresh = TokenUsage(uncached_input_tokens=1000, output_tokens=40)
    assert PriceBook().cost("gpt-5-codex", CODEX_TURN) == PriceBook().cost("gpt-5-codex", fresh)
    monkeypatch.setattr(price_sources, "_sources", [])
    seen: list[TokenUsage] = []

    @price_sources.register
    def in_house(model: str, usage: TokenUsage) -> float | None:
        seen.append(usage)
        return 1.0

    assert PriceBook().cost("gpt-5-codex", CODEX_TURN) == 1.0
    assert [(u.uncached_input_tokens, u.cache_creation_input_tokens) for u in seen] == [(1000, 0)]
