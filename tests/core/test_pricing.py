"""The one price source: genai-prices, a user's price file over it, unknown models warned about once."""

from __future__ import annotations

import logging

import pytest
from genai_prices import Usage, calc_price

from coder_eval_dagster.core import price_sources
from coder_eval_dagster.core.models.results import TokenUsage
from coder_eval_dagster.core.pricing import PriceBook, load_price_file, provider_of
from coder_eval_dagster.core.problems import InvalidInput

TOKENS = TokenUsage(
    uncached_input_tokens=1000, output_tokens=200, cache_read_input_tokens=5000, cache_creation_input_tokens=300
)


def library(model: str, provider: str) -> float:
    whole_prompt = 1000 + 5000 + 300
    usage = Usage(input_tokens=whole_prompt, output_tokens=200, cache_read_tokens=5000, cache_write_tokens=300)
    return float(calc_price(usage, model_ref=model, provider_id=provider).total_price)


@pytest.mark.parametrize(
    ("model", "backend", "reference", "provider"),
    [
        ("claude-sonnet-4-5", None, "claude-sonnet-4-5", "anthropic"),
        ("anthropic.claude-sonnet-4-6", "bedrock", "anthropic.claude-sonnet-4-6", "aws"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", None, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "aws"),
        ("gpt-5-codex", None, "gpt-5-codex", "openai"),
        ("openai/gpt-5", None, "gpt-5", "openai"),
        # a judge or simulator model priced as the run's route sends it
        ("anthropic.claude-sonnet-4-6", "direct", "claude-sonnet-4-6", "anthropic"),
        ("claude-sonnet-4-6", "bedrock", "anthropic.claude-sonnet-4-6", "aws"),
        # on Bedrock, a Claude model the library lists under Anthropic only: Anthropic's list price
        ("claude-haiku-4-5", "bedrock", "claude-haiku-4-5", "anthropic"),
    ],
)
def test_known_models_cost_what_the_library_says_with_the_cache_priced_apart(model, backend, reference, provider):
    cost = PriceBook().cost(model, TOKENS, backend)
    assert cost == pytest.approx(library(reference, provider), rel=1e-6) and cost > 0


def test_cache_reads_cost_less_than_fresh_input():
    book = PriceBook()
    fresh = book.cost("claude-sonnet-4-5", TokenUsage(uncached_input_tokens=10_000))
    cached = book.cost("claude-sonnet-4-5", TokenUsage(cache_read_input_tokens=10_000))
    assert fresh == pytest.approx(0.03) and cached == pytest.approx(0.003)


def test_an_unknown_model_costs_none_and_is_warned_about_once(caplog):
    book = PriceBook()
    with caplog.at_level(logging.WARNING):
        assert [book.cost("claude-test", TOKENS) for _ in range(3)] == [None] * 3
    assert [r.getMessage() for r in caplog.records].count(
        "no price known for model 'claude-test': its cost is left empty (add it with --prices FILE)"
    ) == 1
    assert book.unknown == {"claude-test"}
    assert book.cost(None, TOKENS) is None


def test_a_price_file_adds_and_overrides_models(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text(
        "models:\n"
        "  claude-test: {input_per_mtok: 2, output_per_mtok: 10, cache_read_per_mtok: 0.2}\n"
        "  claude-sonnet-4-5: {input_per_mtok: 1, output_per_mtok: 1}\n"
    )
    book = PriceBook(load_price_file(path))
    # 1000 x 2 + 200 x 10 + 5000 x 0.2 + 300 x 2 (cache writes default to the input price)
    assert book.cost("claude-test", TOKENS) == pytest.approx(5600 / 1e6)
    assert book.cost("anthropic.claude-sonnet-4-5", TOKENS) == pytest.approx(6500 / 1e6)  # by its bare id too
    assert not book.unknown


def test_a_bad_price_file_names_the_file_line_and_field(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text("models:\n  m1: {input_per_mtok: 2, output_per_mtok: 10}\n  m2:\n    input_per_mtok: -1\n")
    with pytest.raises(InvalidInput) as caught:
        load_price_file(path)
    text = str(caught.value)
    assert f"{path}:4" in text and "models.m2.input_per_mtok" in text
    assert "output_per_mtok" in text  # missing in m2


def test_providers_follow_the_model_name_and_backend():
    assert provider_of("claude-opus-4-5") == "anthropic"
    assert provider_of("claude-opus-4-5", "bedrock") == "aws"
    assert provider_of("arn:aws:bedrock:us-east-1:1:inference-profile/x") == "aws"
    assert provider_of("gpt-5.1-codex") == "openai"
    assert provider_of("mistral/codestral") == "mistral"
    assert provider_of("llama3") is None


def test_a_reported_cost_is_kept_and_a_priced_one_says_so():
    book = PriceBook()
    reported = TOKENS.model_copy(update={"total_cost_usd": 9.0, "cost_source": "reported"})
    assert book.priced("claude-sonnet-4-5", reported) == reported
    priced = book.priced("claude-sonnet-4-5", TOKENS)
    assert priced.cost_source == "priced" and priced.total_cost_usd == pytest.approx(
        library("claude-sonnet-4-5", "anthropic")
    )
    unknown = book.priced("claude-test", TOKENS)
    assert (unknown.cost_source, unknown.total_cost_usd) == ("unknown", None)
    assert book.cost("claude-test", TokenUsage()) == 0.0  # nothing spent costs nothing, priced or not


def test_a_price_file_price_wins_over_a_reported_cost_and_a_replay_is_priced_by_it(tmp_path):
    """A gateway model's reported figure is its CLI's guess (Claude Code's default model's list price); the user's
    price file says what it costs: in the book, and for a replayed trajectory's recorded cost_usd."""
    from coder_eval_dagster.core.models.prices import ModelPrice
    from coder_eval_dagster.core.run_context import RunContext

    from ..support.helpers import evaluate_replay

    book = PriceBook({"gw-model": ModelPrice(input_per_mtok=5, output_per_mtok=5)})
    reported = TokenUsage(uncached_input_tokens=1_000_000, total_cost_usd=0.004, cost_source="reported")
    assert book.wins_over_reported("gw-model") and not book.wins_over_reported("claude-sonnet-4-5")
    assert (book.priced("gw-model", reported).total_cost_usd, book.priced("gw-model", reported).cost_source) == (
        5.0,
        "priced",
    )
    assert book.priced("claude-sonnet-4-5", reported) == reported
    context = RunContext.create()
    context.prices = book
    turns = [{"usage": {"input_tokens": 1_000_000, "output_tokens": 0, "cost_usd": 0.004}, "text": "done"}]
    agent = {"type": "replay", "trajectory": "traj.yaml", "model": "gw-model"}
    criteria = [{"type": "file_exists", "path": "x", "description": "d"}]
    result = evaluate_replay(tmp_path, turns, context, agent=agent, success_criteria=criteria)
    (turn,) = result.trajectory
    assert (turn.cost_usd, turn.cost_source) == (5.0, "priced")


def test_an_installed_price_source_is_asked_after_the_price_file_and_before_the_library(tmp_path, monkeypatch):
    monkeypatch.setattr(price_sources, "_sources", [])
    asked = []

    @price_sources.register
    def in_house(model: str, usage: TokenUsage) -> float | None:
        asked.append(model)
        return 1.25 if model in ("house-model", "claude-sonnet-4-5") else None

    prices = tmp_path / "prices.yaml"
    prices.write_text("models:\n  claude-sonnet-4-5: {input_per_mtok: 1, output_per_mtok: 1}\n")
    book = PriceBook(load_price_file(prices))
    assert book.cost("claude-sonnet-4-5", TOKENS) == pytest.approx(6500 / 1e6)  # the file wins: never asked
    assert book.cost("house-model", TOKENS) == 1.25
    assert book.cost("gpt-5-codex", TOKENS) == pytest.approx(library("gpt-5-codex", "openai"), rel=1e-6)
    assert asked == ["house-model", "gpt-5-codex"]
