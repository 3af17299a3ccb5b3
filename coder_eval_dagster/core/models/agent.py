"""`agent`: which coding agent runs, and how it is configured."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from .base import RegisteredNames, RejectsMovedLimits, is_partial, rule_error
from .ignore import IgnorePattern
from .sdk_options import check_sdk_options

AGENT_TYPES = RegisteredNames("agent type")  # core/agents/registry.py registers each with what runs it
DEFAULT_AGENT_TYPE = "claude-code"
PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]


class AgentConfig(RejectsMovedLimits):
    """Every field is optional: the block may be completed by an experiment or --type."""

    type: str | None = Field(default=None, json_schema_extra=AGENT_TYPES.schema)
    permission_mode: PermissionMode = "acceptEdits"
    allowed_tools: list[str] | None = None
    disallowed_tools: list[str] = Field(default_factory=list)
    model: str | None = None
    sdk_options: dict[str, Any] = Field(default_factory=dict)
    claude_settings: dict[str, Any] | str | None = None
    ignore_patterns: list[IgnorePattern] = Field(default_factory=list)
    trajectory: str | None = None

    @field_validator("sdk_options")
    @classmethod
    def _check_sdk_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value:
            check_sdk_options(value)
        return value

    @field_validator("type")
    @classmethod
    def _registered_type(cls, value: str | None) -> str | None:
        return None if value is None else AGENT_TYPES.check(value)

    @property
    def resolved_type(self) -> str:
        return self.type or DEFAULT_AGENT_TYPE

    @model_validator(mode="after")
    def _type_specific_fields(self, info: ValidationInfo) -> AgentConfig:
        if is_partial(info):
            return self
        kind = self.resolved_type
        if self.sdk_options and kind != "claude-code":
            raise rule_error("sdk_options", f"only allowed with type claude-code, not {kind}")
        if self.claude_settings is not None and kind != "claude-code":
            raise rule_error("claude_settings", f"only allowed with type claude-code, not {kind}")
        if kind == "replay" and not self.trajectory:
            raise rule_error("trajectory", "type replay requires a trajectory file")
        if self.trajectory is not None and kind != "replay":
            raise rule_error("trajectory", f"only allowed with type replay, not {kind}")
        return self
