"""Fields shared by the two judge criteria (`llm_judge`, `agent_judge`)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import AfterValidator, Field

from ..models.base import in_reference_folder, in_sandbox, is_absolute, valid_file_name
from ..models.criterion import CriterionBase, names_reference_dir
from .judging import REFERENCE_DIR_PREFIXES, TASK_DIR_PREFIX


def in_its_folder(entry: str) -> str:
    """A ``files`` entry stays in the folder it names: the sandbox, or the reference folder after
    ``$REFERENCE_DIR/``. After ``$TASK_DIR/`` the guide allows ``..`` (a rubric a task family shares), not a
    rooted path."""
    reference = next((p for p in REFERENCE_DIR_PREFIXES if entry.startswith(p)), None)
    if reference is not None:
        in_reference_folder(entry[len(reference) :])
    elif entry.startswith(TASK_DIR_PREFIX):
        valid_file_name(entry)
        if is_absolute(entry[len(TASK_DIR_PREFIX) :]):
            raise ValueError(f"must be relative to the task file's folder after {TASK_DIR_PREFIX}, not absolute")
    else:
        in_sandbox(entry)
    return entry


JudgeFile = Annotated[str, AfterValidator(in_its_folder)]


class JudgeBase(CriterionBase):
    calls_model: ClassVar[bool] = True

    # coder_eval's judges pass at 0.7, not the 0.9 of the other criteria: a judge's score is continuous and rarely 1.0.
    pass_threshold: float = Field(default=0.7, ge=0.0, le=1.0)
    # false: the judge is not run (nothing read, no model called) and scores 1.0, as coder_eval's (judging.skipped).
    enabled: bool = True
    prompt: str = Field(min_length=1)
    files: list[JudgeFile] = Field(default_factory=list)
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
