"""A price file: what models cost, over the built-in prices (``--prices FILE``, an experiment's ``prices:``)."""

from __future__ import annotations

from pydantic import Field

from .base import StrictModel


class ModelPrice(StrictModel):
    """USD per million tokens; cache prices default to the input price."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(default=None, ge=0)
    cache_write_per_mtok: float | None = Field(default=None, ge=0)


class PriceFile(StrictModel):
    """A user's prices: ``models: {<model as tasks name it>: {input_per_mtok: ..., ...}}``."""

    models: dict[str, ModelPrice] = Field(min_length=1)
