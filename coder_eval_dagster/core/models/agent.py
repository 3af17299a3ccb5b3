"""`agent`: which coding agent runs, and how it is configured."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, Field, ValidationInfo, field_validator, model_validator

from .base import RegisteredNames, RejectsMovedLimits, StrictModel, is_partial, rule_error
from .criterion import nulls_unset
from .ignore import IgnorePattern
from .sdk_options import check_sdk_options

# Agent types coder_eval ships that nothing here provides: an agent plugin registers one to make it valid.
NOT_INSTALLED = "coder_eval has it; an agent plugin can provide it"
AGENT_TYPES = RegisteredNames(  # core/agents/registry.py registers each with what runs it
    "agent type", elsewhere=dict.fromkeys(("antigravity", "pi", "delegate", "openhands"), NOT_INSTALLED)
)
DEFAULT_AGENT_TYPE = "claude-code"
PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]
SettingSource = Literal["user", "project", "local"]
ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
# The agent types that read thinking_level (coder_eval's Gemini and pi agents); none of them is built in.
THINKING_TYPES = ("antigravity", "pi")
# The fields only the claude-code agent reads (codex, opencode, replay and none have no use for them).
CLAUDE_CODE_ONLY = (
    "sdk_options",
    "claude_settings",
    "system_prompt_mode",
    "setting_sources",
    "plugins",
)
# The agent types a system prompt reaches: claude-code's is appended to its own, codex's is its developer
# instructions (coder_eval's codex agent's), both on top of the agent's base prompt.
SYSTEM_PROMPT_TYPES = ("claude-code", "codex")
OPENCODE_ONLY = ("variant", "pure")
# What a claude-code agent gets where no layer names it: coder_eval's default experiment's (its packaged
# default_experiment.yaml), so that its users' tasks run the model and offer the tools they did there.
CLAUDE_CODE_DEFAULT_MODEL = "claude-sonnet-4-6"
CLAUDE_CODE_DEFAULT_TOOLS = ("Bash", "Read", "Write", "Edit", "Glob", "Grep", "Skill")
# coder_eval's: the sandbox's CLAUDE.md and .claude/settings.json are read (the guide's CLAUDE.md-hint variant); the
# CLI sees the sandbox at /sandbox, so no CLAUDE.md above it is reached, and its HOME is an empty temporary one
CLAUDE_CODE_DEFAULT_SETTING_SOURCES = ("project",)
# context_window's range per agent type that applies it (coder_eval's): claude-code's auto-compact window, codex's
# model_context_window; None: no upper bound
CONTEXT_WINDOWS: dict[str, tuple[int, int | None]] = {"claude-code": (100_000, 1_000_000), "codex": (32_768, None)}
BY_TYPE_REFUSAL = (
    "not supported: coder_eval's later per-agent defaults block (not in its release); "
    "write the fields in agent itself, a variant per agent type"
)


class Plugin(StrictModel):
    """A Claude Code plugin folder (its ``skills/<name>/SKILL.md`` are offered to the agent)."""

    type: Literal["local"] = "local"
    path: str = Field(min_length=1)


class AgentConfig(RejectsMovedLimits):
    """Every field is optional: the block may be completed by an experiment or --type."""

    type: str | None = Field(default=None, json_schema_extra=AGENT_TYPES.schema)
    permission_mode: PermissionMode = "acceptEdits"
    allowed_tools: list[str] | None = None
    disallowed_tools: list[str] = Field(default_factory=list)
    model: str | None = Field(default=None, pattern=r"\S")  # blank ran the CLI's own default model, unnoticed
    sdk_options: dict[str, Any] = Field(default_factory=dict)
    claude_settings: dict[str, Any] | str | None = None
    # coder_eval reads its later name too
    ignore_patterns: list[IgnorePattern] = Field(
        default_factory=list, validation_alias=AliasChoices("ignore_patterns", "additional_ignore_patterns")
    )
    trajectory: str | None = None
    system_prompt: str | None = None
    system_prompt_file: str | None = None
    system_prompt_mode: Literal["append", "replace"] = "append"
    setting_sources: list[SettingSource] | None = None
    plugins: list[Plugin] | None = None
    thinking_level: ThinkingLevel | None = None
    variant: str | None = Field(default=None, min_length=1)  # opencode's --variant (a provider's reasoning effort)
    pure: bool = True  # opencode without external plugins (its --pure): the only way it runs here
    context_window: int | None = Field(default=None, gt=0)  # tokens the agent works within (see CONTEXT_WINDOWS)

    _nulls = nulls_unset("disallowed_tools")  # coder_eval's Optional field

    @model_validator(mode="before")
    @classmethod
    def _not_installed_type(cls, data: Any) -> Any:
        """An agent type nothing here provides is the one problem of the block: its own fields are unknown here;
        coder_eval's ``by_type`` block is refused with its reason."""
        kind = data.get("type") if isinstance(data, dict) else None
        refusal = AGENT_TYPES.not_installed(kind) if isinstance(kind, str) else None
        if refusal:
            raise rule_error("type", refusal)
        if isinstance(data, dict) and "by_type" in data:  # said as the refusal it is, not as an unknown field
            raise rule_error("by_type", BY_TYPE_REFUSAL)
        return data

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

    @field_validator("system_prompt")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value if value is None or value.strip() else None

    def is_set(self, name: str) -> bool:
        """The field holds something other than its default, and not an empty list or mapping: ``sdk_options: {}``
        and ``plugins: []`` (coder_eval's bare A/B variant, over any agent type) ask for nothing."""
        value = getattr(self, name)
        empty = isinstance(value, list | dict) and not value
        return not empty and bool(value != type(self).model_fields[name].get_default(call_default_factory=True))

    @property
    def resolved_type(self) -> str:
        return self.type or DEFAULT_AGENT_TYPE

    @model_validator(mode="after")
    def _type_specific_fields(self, info: ValidationInfo) -> AgentConfig:
        if self.system_prompt is not None and self.system_prompt_file is not None:
            raise rule_error("system_prompt_file", "set system_prompt or system_prompt_file, not both")
        if is_partial(info):
            return self
        kind = self.resolved_type
        for name in CLAUDE_CODE_ONLY:
            if self.is_set(name) and kind != "claude-code":
                raise rule_error(name, f"only allowed with type claude-code, not {kind}")
        for name in ("system_prompt", "system_prompt_file"):
            if self.is_set(name) and kind not in SYSTEM_PROMPT_TYPES:
                raise rule_error(name, f"only allowed with type {' or '.join(SYSTEM_PROMPT_TYPES)}, not {kind}")
        for name in OPENCODE_ONLY:
            if self.is_set(name) and kind != "opencode":
                raise rule_error(name, f"only allowed with type opencode, not {kind}")
        if not self.pure:
            raise rule_error("pure", "opencode always runs without external plugins here: its HOME is its own")
        if self.allowed_tools is not None and "tools" in self.sdk_options:
            raise rule_error("sdk_options.tools", "set allowed_tools or sdk_options.tools, not both")
        if self.system_prompt_mode == "replace" and self.system_prompt is None and self.system_prompt_file is None:
            raise rule_error("system_prompt_mode", "replace needs a system_prompt (or system_prompt_file)")
        if self.thinking_level is not None and kind not in THINKING_TYPES:
            raise rule_error(
                "thinking_level",
                f"read by the {' and '.join(THINKING_TYPES)} agents only, not {kind}"
                + (" (claude-code: sdk_options: {effort: ...})" if kind == "claude-code" else ""),
            )
        self._check_context_window(kind)
        if kind == "opencode":
            self._check_provider_model()
        if kind == "replay" and not self.trajectory:
            raise rule_error("trajectory", "type replay requires a trajectory file")
        if self.trajectory is not None and kind != "replay":
            raise rule_error("trajectory", f"only allowed with type replay, not {kind}")
        return self

    def with_claude_code_defaults(self) -> AgentConfig:
        """A claude-code agent with coder_eval's default model and tools where no layer set them (a task's own
        agent, not a judge's: its defaults are the judge's)."""
        if self.resolved_type != "claude-code":
            return self
        update: dict[str, Any] = {}
        if self.model is None:
            update["model"] = CLAUDE_CODE_DEFAULT_MODEL
        if self.allowed_tools is None and "tools" not in self.sdk_options:
            update["allowed_tools"] = list(CLAUDE_CODE_DEFAULT_TOOLS)
        if self.setting_sources is None:
            update["setting_sources"] = list(CLAUDE_CODE_DEFAULT_SETTING_SOURCES)
        return self.model_copy(update=update) if update else self

    def _check_provider_model(self) -> None:
        """An opencode model names its provider (``custom/my-model``): without one, every evaluation would fail."""
        provider, _, model = (self.model or "").partition("/")
        if not provider or not model:
            given = "none is set" if self.model is None else f"not {self.model!r}"
            raise rule_error("model", f"opencode routes a model by its provider: give provider/model, {given}")

    def _check_context_window(self, kind: str) -> None:
        """In the range of an agent type that applies it; not beside the settings key it would silently outrank."""
        if self.context_window is None:
            return
        if kind not in CONTEXT_WINDOWS:
            applying = " and ".join(CONTEXT_WINDOWS)
            raise rule_error("context_window", f"applied by the {applying} agents only, not {kind}")
        low, high = CONTEXT_WINDOWS[kind]
        if self.context_window < low or (high is not None and self.context_window > high):
            within = f"{low:,} to {high:,}" if high is not None else f"at least {low:,}"
            raise rule_error("context_window", f"{self.context_window:,} is out of range for {kind}: {within} tokens")
        if isinstance(self.claude_settings, dict) and "autoCompactWindow" in self.claude_settings:
            raise rule_error("context_window", "claude_settings.autoCompactWindow sets the same window: set only one")
