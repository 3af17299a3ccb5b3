"""The interval every comparison figure carries; no numpy or scipy, so the run's summary imports it cheaply."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
