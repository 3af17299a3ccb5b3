"""Sandboxes: where an evaluation runs. Drivers share one small interface."""

from __future__ import annotations

from pathlib import Path

from ..models.sandbox import SandboxConfig
from .process import Interrupt
from .tempdir import TempdirSandbox
from .templates import TemplateError

__all__ = ["TempdirSandbox", "TemplateError", "open_sandbox"]


def open_sandbox(
    root: Path,
    config: SandboxConfig,
    cache_dir: Path | None = None,
    labels: dict[str, str] | None = None,
    interrupt: Interrupt | None = None,
) -> TempdirSandbox:
    """The sandbox of ``config.driver`` at ``root``; ``labels`` name the evaluation (docker: container labels),
    ``interrupt`` is the run's."""
    if config.driver == "docker":
        from .docker import DockerSandbox

        return DockerSandbox(root, config, cache_dir, labels, interrupt)
    return TempdirSandbox(root, config, cache_dir, interrupt)
