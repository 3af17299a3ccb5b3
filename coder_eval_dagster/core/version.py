"""The package's name and installed version: what written files say made them (run.json, ATIF exports).

A module of its own, importing nothing of the package, so that any module
(the ATIF reader and writer, which resolution imports) may name the version
without an import cycle.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

PACKAGE = "coder-eval-dagster"


def framework_version() -> str:
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"
