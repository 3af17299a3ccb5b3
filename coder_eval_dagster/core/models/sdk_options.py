"""Validation of `agent.sdk_options` against the installed claude-agent-sdk.

The SDK is imported only when a task actually sets sdk_options: importing it
costs about a second, which `coder-eval validate` should not pay for nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

from pydantic import TypeAdapter, ValidationError

from .base import did_you_mean, rule_errors

INPUT_SHOULD_BE = "Input should be "  # how pydantic words a type's expectation
SHOWN_CHARS = 80  # of a mistyped value, in the message

# Keys the runtime sets itself; a task may not override them through sdk_options.
FRAMEWORK_MANAGED = frozenset(
    {
        "model",
        "allowed_tools",
        "disallowed_tools",
        "permission_mode",
        "hooks",
        "mcp_servers",
        "cwd",
        "env",
        "max_turns",
        "setting_sources",
        "settings",
        "system_prompt",
        "plugins",
        "cli_path",
        "can_use_tool",
        "stderr",
        "debug_stderr",
        "resume",
        "continue_conversation",
        "session_id",
        "fork_session",
        "resume_session_at",
        "resume_drops_turn",
        "include_partial_messages",
        "include_hook_events",
        "max_budget_usd",
        "user",
        "session_store",
        "session_store_flush",
        "permission_prompt_tool_name",
        # ways around the keys above (as coder_eval refuses them): a CLI flag set directly (`--permission-mode`,
        # `--model`), subagents with their own tools and model, the CLI's own sandbox and skills, more folders
        "extra_args",
        "agents",
        "sandbox",
        "skills",
        "add_dirs",
        "task_budget",
    }
)


@functools.cache
def _option_types() -> dict[str, Any]:
    from claude_agent_sdk import ClaudeAgentOptions

    hints = typing.get_type_hints(ClaudeAgentOptions)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(ClaudeAgentOptions)}


@functools.cache
def _adapter(name: str) -> TypeAdapter[Any] | None:
    try:
        return TypeAdapter(_option_types()[name])
    except Exception:  # a type pydantic cannot express (callables): keys only
        return None


def check_sdk_options(options: dict[str, Any]) -> None:
    """Raise a rule error for every key that is unknown, managed or mistyped (each names the key, and within a
    list or mapping value the item, so that it points at that key's line)."""
    problems = [problem for problem in map(_problem, options.items()) if problem is not None]
    if problems:
        raise rule_errors("sdk_options", problems)


def unsettable(key: str) -> str | None:
    """Why ``key`` cannot be set through sdk_options, whatever its value (None: it can)."""
    if key in FRAMEWORK_MANAGED:
        return "managed by coder-eval and cannot be set through sdk_options"
    if key not in _option_types():
        known = set(_option_types()) - FRAMEWORK_MANAGED
        return f"not a ClaudeAgentOptions field of the installed claude-agent-sdk{did_you_mean(key, known)}"
    return None


def _problem(option: tuple[str, Any]) -> tuple[str, str] | None:
    """The field and the message of what is wrong with one option, if anything is."""
    key, value = option
    why = unsettable(key)
    if why is not None:
        return key, why
    adapter = _adapter(key)
    if adapter is not None:
        try:
            adapter.validate_python(value)
        except ValidationError as exc:
            return _mistyped(key, value, exc)
    return None


def _mistyped(key: str, value: object, exc: ValidationError) -> tuple[str, str]:
    """What the option's value should be and what it is (pydantic's first error, in words, without its link),
    at the item of a list or mapping value it is about."""
    error = exc.errors(include_url=False)[0]
    where = _inside(value, error["loc"])
    message = error["msg"]
    expected = "expected " + message.removeprefix(INPUT_SHOULD_BE) if message.startswith(INPUT_SHOULD_BE) else message
    given = error["input"]
    shown = repr(given) if len(repr(given)) <= SHOWN_CHARS else repr(given)[:SHOWN_CHARS] + "..."
    return ".".join([key, *map(str, where)]), f"{expected}; given {shown} ({type(given).__name__})"


def _inside(value: object, location: tuple[int | str, ...]) -> list[int | str]:
    """The leading parts of an error's ``location`` that index ``value``; the rest name the branches of a union
    (``'str'``, ``'lax-or-strict[...]'``), which the user never wrote."""
    parts: list[int | str] = []
    for part in location:
        value = _item(value, part)
        if value is _ABSENT:
            break
        parts.append(part)
    return parts


_ABSENT = object()


def _item(value: object, part: int | str) -> object:
    """``value[part]`` of a list or a dict that holds it, else ``_ABSENT``."""
    if isinstance(value, list):
        return value[part] if isinstance(part, int) and 0 <= part < len(value) else _ABSENT
    if isinstance(value, dict):
        return value.get(part, _ABSENT)
    return _ABSENT
