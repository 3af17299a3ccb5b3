"""Sandboxes: where an evaluation runs. Drivers share one small interface."""

from .tempdir import TempdirSandbox
from .templates import TemplateError

__all__ = ["TempdirSandbox", "TemplateError"]
