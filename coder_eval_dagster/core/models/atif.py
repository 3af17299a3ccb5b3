"""Harbor's Agent Trajectory Interchange Format (ATIF), its RFC 0001 up to ATIF-v1.8: one model per schema block.

The field names, their types and the rules that make a file valid are the
RFC's (``rfcs/0001-trajectory-format.md`` of the Harbor project): every block
rejects keys it does not define, as Harbor's own validator does, so a file
written here validates there and the other way round. Every version from
ATIF-v1.0 is read (each only added optional fields and kinds, v1.8 audio
parts), under the newest one's rules as Harbor reads them. Files are written
as ``ATIF_VERSION``, v1.7: what an export holds is all in it, and Harbor's
validators before v1.8 (its 0.24 and older) read it too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .base import rule_error

AtifVersion = Literal[
    "ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4", "ATIF-v1.5", "ATIF-v1.6", "ATIF-v1.7", "ATIF-v1.8"
]
ATIF_VERSION: AtifVersion = "ATIF-v1.7"  # what an export writes (see above)
Extra = dict[str, Any] | None  # the free-form ``extra`` object every block may carry


class AtifBlock(BaseModel):
    """An ATIF object: only the RFC's keys (Harbor's validator refuses any other)."""

    model_config = ConfigDict(extra="forbid")


class ImageSource(AtifBlock):
    media_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
    path: str


AudioMediaType = Literal[
    "audio/wav", "audio/mpeg", "audio/mp4", "audio/aac", "audio/ogg", "audio/flac", "audio/webm", "audio/aiff"
]
# The spellings producers write for an audio type, read as Harbor reads them (Gemini's ``audio/mp3``, for one).
AUDIO_ALIASES = {
    "audio/mp3": "audio/mpeg",
    "audio/mpga": "audio/mpeg",
    "audio/x-mpeg": "audio/mpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/x-m4a": "audio/mp4",
    "audio/m4a": "audio/mp4",
    "audio/x-aac": "audio/aac",
    "audio/x-flac": "audio/flac",
    "audio/x-aiff": "audio/aiff",
}


class AudioSource(AtifBlock):
    """An audio file or URL (v1.8)."""

    media_type: AudioMediaType
    path: str
    duration_sec: float | None = Field(default=None, ge=0)

    @field_validator("media_type", mode="before")
    @classmethod
    def _registered_spelling(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().lower()
            return AUDIO_ALIASES.get(value, value)
        return value


MEDIA_SOURCES: dict[str, type[AtifBlock]] = {"image": ImageSource, "audio": AudioSource}


class ContentPart(AtifBlock):
    """Multimodal content: a text part (v1.6), an image part (v1.6) or an audio part (v1.8)."""

    type: Literal["text", "image", "audio"]
    text: str | None = None
    source: ImageSource | AudioSource | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ContentPart:
        if self.type == "text" and (self.text is None or self.source is not None):
            raise rule_error("type", "a text part has text and no source")
        if self.type != "text" and (self.text is not None or not isinstance(self.source, MEDIA_SOURCES[self.type])):
            raise rule_error("type", f"an {self.type} part has an {self.type} source (its media_type) and no text")
        return self


Content = str | list[ContentPart]


class Agent(AtifBlock):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None  # OpenAI's function-calling form
    extra: Extra = None


class ToolCall(AtifBlock):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: Extra = None


class SubagentTrajectoryRef(AtifBlock):
    trajectory_id: str | None = None
    session_id: str | None = None  # informational only (v1.7)
    trajectory_path: str | None = None
    extra: Extra = None

    @model_validator(mode="after")
    def _resolvable(self) -> SubagentTrajectoryRef:
        if self.trajectory_id is None and self.trajectory_path is None:
            raise rule_error("trajectory_id", "a subagent reference sets trajectory_id or trajectory_path")
        return self


class ObservationResult(AtifBlock):
    source_call_id: str | None = None
    content: Content | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None
    extra: Extra = None


class Observation(AtifBlock):
    results: list[ObservationResult]


class Metrics(AtifBlock):
    """One step's LLM usage: ``prompt_tokens`` counts the whole prompt, ``cached_tokens`` the part read from cache."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: Extra = None  # provider-specific counts, e.g. cache_creation_input_tokens


class FinalMetrics(AtifBlock):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: Extra = None


AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


class Step(AtifBlock):
    """A system prompt, a user message, or one agent turn (its inference, its tool calls, what they returned)."""

    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: Content
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = Field(default=None, ge=0)
    extra: Extra = None

    @field_validator("timestamp")
    @classmethod
    def _iso_8601(cls, value: str | None) -> str | None:
        if value is not None:
            datetime.fromisoformat(value.replace("Z", "+00:00"))  # a ValueError names the field
        return value

    @model_validator(mode="after")
    def _agent_fields_on_agent_steps(self) -> Step:
        if self.source != "agent":
            present = [name for name in AGENT_ONLY if getattr(self, name) is not None]
            if present:
                raise rule_error(present[0], f"only on a step whose source is agent (this one's is {self.source})")
        if self.source == "agent" and self.llm_call_count == 0 and (self.metrics or self.reasoning_content):
            field = "metrics" if self.metrics else "reasoning_content"
            raise rule_error(field, "not on a step with llm_call_count 0 (no model call)")
        return self

    @property
    def text(self) -> str:
        """The message as text (the text parts of a multimodal one)."""
        if isinstance(self.message, str):
            return self.message
        return "\n".join(part.text for part in self.message if part.text is not None)


class Trajectory(AtifBlock):
    """A whole ATIF document; steps are numbered from 1 and every observation names a call of its own step."""

    schema_version: AtifVersion = ATIF_VERSION
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: Extra = None
    subagent_trajectories: list[Trajectory] | None = None

    @model_validator(mode="after")
    def _numbered_from_one(self) -> Trajectory:
        for position, step in enumerate(self.steps, start=1):
            if step.step_id != position:
                raise rule_error(f"steps.{position - 1}.step_id", f"is {step.step_id}; steps are numbered 1, 2, 3...")
        return self

    @model_validator(mode="after")
    def _observations_name_their_calls(self) -> Trajectory:
        for index, step in enumerate(self.steps):
            calls = {call.tool_call_id for call in step.tool_calls or []}
            for number, result in enumerate(step.observation.results if step.observation else []):
                if result.source_call_id is not None and result.source_call_id not in calls:
                    where = f"steps.{index}.observation.results.{number}.source_call_id"
                    raise rule_error(where, f"names no tool call of its step ({result.source_call_id!r})")
        return self

    @model_validator(mode="after")
    def _embedded_subagents_identified(self) -> Trajectory:
        ids = [sub.trajectory_id for sub in self.subagent_trajectories or []]
        if None in ids or len(set(ids)) != len(ids):
            raise rule_error("subagent_trajectories", "every embedded subagent trajectory has its own trajectory_id")
        return self
