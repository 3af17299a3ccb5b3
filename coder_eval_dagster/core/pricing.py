"""What tokens cost: one price source for agents, judges, the simulated user, the forecast and the budgets.

Prices come from ``genai-prices`` (Pydantic's maintained price data: Anthropic,
OpenAI, Bedrock and others, cache reads and writes, long-context tiers; the
data ships inside the package, so pricing works offline and never calls out).
A user's price file (``--prices FILE``, or ``prices:`` in an experiment) adds
or overrides models; installed packages' price sources (``price_sources``) are
asked next. A model none of them knows is ``unknown``: cost ``None``, one
warning per run naming it, never an error.

Usage is our ``TokenUsage``: the prompt in three parts (uncached, cache
creation, cache read); genai-prices takes the whole prompt as its
``input_tokens`` and prices the cached parts apart. Codex's fresh prompt is
recorded as cache creation (see agents/codex.py); OpenAI bills no cache writes,
so an OpenAI model's cache creation is priced as input by every source (a
price file's ``cache_write_per_mtok`` included), its recorded counts unchanged.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from .models.prices import ModelPrice, PriceFile
from .models.results import TokenUsage
from .price_sources import installed_cost
from .problems import InvalidInput, problems_from_validation
from .routing import Backend, translate_model, without_profile
from .yamlio import load_document

if TYPE_CHECKING:
    from genai_prices.types import PriceCalculation

log = logging.getLogger(__name__)

PER_MILLION = 1_000_000


def load_price_file(path: Path) -> dict[str, ModelPrice]:
    """A price file, validated; problems name the file, line and field."""
    document = load_document(path)
    try:
        return PriceFile.model_validate(document.data).models
    except ValidationError as exc:
        raise InvalidInput(
            problems_from_validation(exc, document.data, str(path), document.line_of, model=PriceFile)
        ) from None


def provider_of(model: str, backend: Backend | None = None) -> str | None:
    """genai-prices' provider id for a model as tasks name it (``None``: let the library find it)."""
    if model.startswith("arn:") or backend == "bedrock" or ".anthropic." in f".{model}":
        return "aws"
    if "/" in model:  # opencode and LiteLLM style: provider/model
        return model.split("/", 1)[0]
    if model.startswith("claude"):
        return "anthropic"
    if model.startswith(("gpt", "codex", "o1", "o3", "o4")):
        return "openai"
    return None


class PriceBook:
    """The run's prices: the user's overrides, installed price sources, then genai-prices; unknown models warned
    about once."""

    def __init__(self, overrides: dict[str, ModelPrice] | None = None):
        self.overrides = overrides or {}
        self.unknown: set[str] = set()
        self._lock = threading.Lock()

    def cost(
        self, model: str | None, usage: TokenUsage, backend: Backend | None = None, warn: bool = True
    ) -> float | None:
        """The USD cost of ``usage`` on ``model``, or ``None`` when nobody prices the model (said once, unless
        ``warn`` is false: an estimate that the agent's own reported cost replaces)."""
        if not usage.spent:
            return 0.0
        if not model:
            return None
        usage = _as_billed(model, usage, backend)
        override = self._override(model)
        if override is not None:
            return _override_cost(override, usage)
        installed = installed_cost(model, usage)
        if installed is not None:
            return installed
        for named, provider in _library_names(model, backend):
            try:
                return _library_cost(named, usage, provider)
            except LookupError:
                continue
        if warn:
            self._warn_once(model)
        return None

    def _override(self, model: str | None) -> ModelPrice | None:
        """The run's price file's price for ``model``: as sent, as named, as the direct API names it."""
        names = (model, without_profile(model), translate_model(model, "direct")) if model else ()
        return next((self.overrides[name] for name in names if name in self.overrides), None)

    def wins_over_reported(self, model: str | None) -> bool:
        """Whether the run's price file prices ``model``: the user's price then replaces a CLI's reported cost (Claude
        Code prices a model it does not know, a gateway's, at its default model's list price)."""
        return self._override(model) is not None

    def context_window(self, model: str | None, backend: Backend | None = None) -> int | None:
        """The model's context window in tokens, as genai-prices lists it; None when it does not know the model
        (a price file or a price source gives prices, not windows). The forecast bounds a turn's tokens with it."""
        for named, provider in _library_names(model, backend) if model else []:
            try:
                window = _library_calculation(named, TokenUsage(), provider).model.context_window
            except LookupError:
                continue
            return int(window) if window else None
        return None

    def priced(self, model: str | None, usage: TokenUsage, backend: Backend | None = None) -> TokenUsage:
        """``usage`` with its cost: a reported cost is kept unless the price file prices the model; else tokens x
        prices, or unknown."""
        if usage.cost_source == "reported" and usage.total_cost_usd is not None and not self.wins_over_reported(model):
            return usage
        cost = self.cost(model, usage, backend)
        return usage.model_copy(update={"total_cost_usd": cost, "cost_source": "unknown" if cost is None else "priced"})

    def _warn_once(self, model: str) -> None:
        with self._lock:
            if model in self.unknown:
                return
            self.unknown.add(model)
        log.warning("no price known for model %r: its cost is left empty (add it with --prices FILE)", model)


def _library_names(model: str, backend: Backend | None) -> list[tuple[str, str | None]]:
    """Where genai-prices may know the model: as the run's route sent it, then, for a Claude model on Bedrock
    the library lists only under Anthropic, at Anthropic's list price (Bedrock's global endpoints charge it)."""
    named = without_profile(translate_model(model, backend) if backend else model)
    provider = provider_of(named, backend)
    names = [(named, provider)]
    direct = translate_model(model, "direct")
    if provider == "aws" and direct.startswith("claude"):
        names.append((direct, "anthropic"))
    return names


def _as_billed(model: str, usage: TokenUsage, backend: Backend | None) -> TokenUsage:
    """``usage`` as the model's provider bills it: OpenAI has no cache writes, so cache creation on an OpenAI model
    (Codex's fresh prompt) is uncached input, at the input price whatever the price source says of cache writes."""
    if provider_of(model, backend) != "openai" or not usage.cache_creation_input_tokens:
        return usage
    fresh = usage.uncached_input_tokens + usage.cache_creation_input_tokens
    return usage.model_copy(update={"uncached_input_tokens": fresh, "cache_creation_input_tokens": 0})


def _override_cost(price: ModelPrice, usage: TokenUsage) -> float:
    read = price.input_per_mtok if price.cache_read_per_mtok is None else price.cache_read_per_mtok
    write = price.input_per_mtok if price.cache_write_per_mtok is None else price.cache_write_per_mtok
    total = (
        usage.uncached_input_tokens * price.input_per_mtok
        + usage.output_tokens * price.output_per_mtok
        + usage.cache_read_input_tokens * read
        + usage.cache_creation_input_tokens * write
    )
    return round(total / PER_MILLION, 8)


def _library_cost(model: str, usage: TokenUsage, provider: str | None) -> float:
    return round(float(_library_calculation(model, usage, provider).total_price), 8)


def _library_calculation(model: str, usage: TokenUsage, provider: str | None) -> PriceCalculation:
    """genai-prices' price of ``usage`` on ``model`` (with the model's data); LookupError when it does not know it."""
    from genai_prices import Usage, calc_price

    library_usage = Usage(
        input_tokens=usage.input_tokens,  # the whole prompt, cached parts included
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_input_tokens,
        cache_write_tokens=usage.cache_creation_input_tokens,
    )
    reference = model.split("/", 1)[1] if provider and model.startswith(f"{provider}/") else model
    return calc_price(library_usage, model_ref=reference, provider_id=provider)
