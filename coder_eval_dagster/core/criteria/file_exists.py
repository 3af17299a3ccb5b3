"""`file_exists`: the file is there."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from .base import CriterionBase, Scoring


class FileExists(CriterionBase):
    scoring: ClassVar[Scoring] = "binary"
    type: Literal["file_exists"]
    path: str = Field(min_length=1)
