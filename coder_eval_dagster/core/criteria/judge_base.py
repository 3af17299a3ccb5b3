"""Fields shared by the two judge criteria (`llm_judge`, `agent_judge`)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from ..models.criterion import CriterionBase, names_reference_dir


class JudgeBase(CriterionBase):
    calls_model: ClassVar[bool] = True

    prompt: str = Field(min_length=1)
    files: list[str] = Field(default_factory=list)
    include_reference: bool = False
    include_agent_output: bool = False
    include_tool_calls: bool = False
    include_dialog: bool = False
    max_dialog_chars: int = Field(default=80000, ge=1)
    max_file_chars: int = Field(default=20000, ge=1)
    capture_transcript: bool = True
    max_transcript_chars: int = Field(default=100000, ge=1)

    def reads_reference_dir(self) -> bool:
        return any(names_reference_dir(entry) for entry in self.files)
