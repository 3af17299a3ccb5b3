"""Sandboxes: where an evaluation runs. Drivers implement one interface (``base.Sandbox``), registered here."""

from __future__ import annotations

import importlib
from pathlib import Path

from ..models.sandbox import SANDBOX_DRIVERS, SandboxConfig
from .base import Sandbox
from .process import Interrupt
from .templates import TemplateError

# Each driver (``sandbox.driver``) -> "module:class" here, imported on first use (the docker SDK is an extra),
# and registered with the format. A driver takes (root, config, cache_dir, labels, interrupt).
DRIVERS: dict[str, str] = {"tempdir": "tempdir:TempdirSandbox", "docker": "docker:DockerSandbox"}
for _name in DRIVERS:
    SANDBOX_DRIVERS.register(_name)

__all__ = ["DRIVERS", "Sandbox", "TemplateError", "open_sandbox"]


def open_sandbox(
    root: Path,
    config: SandboxConfig,
    cache_dir: Path | None = None,
    labels: dict[str, str] | None = None,
    interrupt: Interrupt | None = None,
) -> Sandbox:
    """The sandbox of ``config.driver`` at ``root``; ``labels`` name the evaluation (docker: container labels),
    ``interrupt`` is the run's (a sandbox standing alone gets its own)."""
    module, name = DRIVERS[config.driver].split(":")
    driver = getattr(importlib.import_module(f".{module}", __package__), name)
    sandbox: Sandbox = driver(root, config, cache_dir=cache_dir, labels=labels, interrupt=interrupt)
    return sandbox
