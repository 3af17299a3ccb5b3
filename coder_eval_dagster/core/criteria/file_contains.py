"""`file_contains`: required strings present, forbidden strings absent."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import CriterionBase, Scoring


class FileContains(CriterionBase):
    scoring: ClassVar[Scoring] = "fractional"
    type: Literal["file_contains"]
    path: str = Field(min_length=1)
    includes: list[str] = Field(default_factory=list)
    excludes: list[str] = Field(default_factory=list)
