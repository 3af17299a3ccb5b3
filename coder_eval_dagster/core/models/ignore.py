"""Ignore-pattern overrides shared by `sandbox` and `agent` blocks."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator


def _clean_pattern(value: str) -> str:
    stripped = value.strip()
    if not stripped:
        raise ValueError("empty ignore pattern")
    if stripped == "!":
        raise ValueError("bare '!' is not a pattern; write '!<pattern>' to un-ignore a default")
    return stripped


IgnorePattern = Annotated[str, AfterValidator(_clean_pattern)]
