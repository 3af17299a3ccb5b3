"""`pre_run` / `post_run` shell commands."""

from __future__ import annotations

from pydantic import Field

from .base import ShellCommand, StrictModel


class HookCommand(StrictModel):
    """One shell command run in the sandbox before or after the agent.

    ``fail_on_error`` aborts a pre_run sequence with ERROR; on post_run it is
    accepted and recorded, but post_run never changes the verdict.
    """

    command: ShellCommand
    timeout: float = Field(default=30, ge=1, le=300)
    fail_on_error: bool = True
